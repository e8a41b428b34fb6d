package syscalls

//go:generate python3 gen_tables.py
//go:generate gofmt -w table_x86.go table_generic.go table_unified.go
