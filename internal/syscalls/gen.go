package syscalls

//go:generate python3 gen_tables.py
