package web

import (
	"net/url"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
)

// FuzzQuery: whatever a page (or anything else on this machine) asks, the
// server answers or refuses, and never panics.
func FuzzQuery(f *testing.F) {
	for _, q := range []string{"f=0", "f=1&base=0", "f=0&t0=0&t1=1000000000&comm=app", "f=0&focus=work&merge=alpha&hide=libz.so&frames=user",
		"f=0&fn=work", "f=0&pid=10,11&tid=11&cpu=1&event=sched:sched_wakeup", "f=0&t0=18446744073709551615&t1=18446744073709551615"} {
		for _, v := range []string{"flame", "top", "sandwich", "time", "source", "diff", "hist", "fields", "meta"} {
			f.Add(v, q)
		}
	}
	s := New([]string{"a", "b"}, []*model.Profile{synth(30), synth(90)})
	f.Fuzz(func(t *testing.T, view, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		s.answer(view, q)
	})
}
