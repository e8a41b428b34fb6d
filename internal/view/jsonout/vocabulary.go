package jsonout

// Vocabulary is every key a sonde JSON document may use, with its meaning.
// docs/json.md says the same in prose (a test keeps the two in step). Add a
// key here only when no existing one means the same thing; units go in the
// suffix (_ns for nanoseconds, _bytes for bytes) and nowhere else.
var Vocabulary = map[string]string{
	// Shared by every command.
	"command":     "the sonde command that wrote the document",
	"target":      "what was measured, as the text view names it (a command line, 'pid 42', 'system wide')",
	"duration_ns": "how long something took or lasted, in nanoseconds",
	"exit_code":   "exit status of the command sonde ran",
	"count":       "how many times something happened",
	"pid":         "process id (thread group id)",
	"tid":         "thread id",
	"comm":        "task name (the kernel's comm, at most 15 bytes)",
	"cpu":         "CPU number",
	"name":        "name of the thing the row describes",
	"kind":        "what sort of thing the row describes",
	"event":       "event name as given to -e",
	"reason":      "why something is not usable or not shown",
	"warnings":    "things the user should know about the result, one sentence each",

	// list
	"usable": "whether the event can be opened on this machine",
}
