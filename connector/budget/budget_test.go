package budget

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestReserve(t *testing.T) {
	b := New(200) // hands out 100
	if b.Limit() != 100 {
		t.Fatalf("Limit %d, want 100 (half of memory.limit)", b.Limit())
	}
	ctx := context.Background()
	if err := b.Reserve(ctx, 60); err != nil {
		t.Fatal(err)
	}
	if err := b.Reserve(ctx, 40); err != nil {
		t.Fatal(err)
	}
	if b.Used() != 100 || b.Pauses() != 0 {
		t.Fatalf("used %d, pauses %d; want 100, 0", b.Used(), b.Pauses())
	}

	// A reservation that does not fit waits until enough is released.
	done := make(chan error, 1)
	go func() { done <- b.Reserve(ctx, 50) }()
	for b.Pauses() == 0 {
		time.Sleep(time.Millisecond) // until the reservation waits
	}
	select {
	case err := <-done:
		t.Fatalf("Reserve returned %v while the budget was spent", err)
	default:
	}
	b.Release(60)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.Used() != 90 {
		t.Errorf("used %d, want 90", b.Used())
	}

	// A cancelled wait returns the context's error and takes nothing.
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- b.Reserve(cctx, 50) }()
	for b.Pauses() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Reserve: %v", err)
	}
	if b.Used() != 90 {
		t.Errorf("used %d after a cancelled Reserve, want 90", b.Used())
	}

	// With nothing held, one reservation larger than the limit goes through.
	b.Add(-90)
	if err := b.Reserve(ctx, 1000); err != nil || b.Used() != 1000 {
		t.Errorf("oversized Reserve with nothing held: %v, used %d", err, b.Used())
	}
}

func TestPool(t *testing.T) {
	b := New(1 << 20)
	p := NewPool(b)
	ctx := context.Background()
	buf, err := p.Get(ctx, 1000)
	if err != nil || len(buf) != 1000 || b.Used() != 1000 {
		t.Fatalf("Get: %d bytes, %v, used %d", len(buf), err, b.Used())
	}
	p.Put(buf)
	if b.Used() != 0 {
		t.Errorf("used %d after Put, want 0", b.Used())
	}
	buf, _ = p.Get(ctx, 10)
	p.Drop(buf)
	if err := p.Reserve(ctx, 300); err != nil || b.Used() != 300 {
		t.Errorf("Reserve: %v, used %d", err, b.Used())
	}
	p.Release(300)
	if b.Used() != 0 {
		t.Errorf("used %d at the end, want 0", b.Used())
	}
}

// holder is a Holder whose requests the test reads.
type holder struct {
	name string
	st   Stat
	reqs chan<- string
}

func (h *holder) MemStat() Stat { return h.st }
func (h *holder) Request(r Request) {
	what := map[Request]string{Flush: "flush", Rotate: "rotate"}[r]
	select {
	case h.reqs <- h.name + " " + what:
	default: // the test has read what it wanted
	}
}

// TestRelief: under pressure the relief drains idle writers first, then
// asks for the spare buffers, then the largest row group worth flushing,
// and past rotateAt rotates the oldest files until the deficit is covered.
func TestRelief(t *testing.T) {
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		used    int64 // of a limit of 1000
		idle    int64 // what DrainIdle gives back
		holders []*holder
		want    []string // the first requests, in order
	}{
		{name: "spares", used: 850, holders: []*holder{
			{name: "a", st: Stat{Spare: 10, Held: 100, Oldest: old}},
			{name: "b", st: Stat{Largest: 1 << 20, Held: 700}},
		}, want: []string{"a flush"}},
		{name: "largest", used: 850, holders: []*holder{
			{name: "a", st: Stat{Largest: 300 << 10, Held: 100}},
			{name: "b", st: Stat{Largest: 1 << 20, Held: 700}},
		}, want: []string{"b flush"}},
		{name: "rotate oldest", used: 990, holders: []*holder{
			{name: "new", st: Stat{Largest: 1000, Held: 400, Oldest: old.Add(2 * time.Hour)}},
			{name: "old", st: Stat{Largest: 1000, Held: 100, Oldest: old}},
			{name: "mid", st: Stat{Largest: 1000, Held: 100, Oldest: old.Add(time.Hour)}},
		}, want: []string{"old rotate", "mid rotate"}}, // deficit 990-800 = 190: two files of 100
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := New(2000)
			b.Add(c.used)
			reqs := make(chan string, 16)
			r := Relief{Budget: b,
				Holders: func(add func(Holder)) {
					for _, h := range c.holders {
						h.reqs = reqs
						add(h)
					}
				},
				DrainIdle: func() int64 { return 0 },
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go r.Run(ctx)
			for _, want := range c.want {
				if got := <-reqs; got != want {
					t.Fatalf("request %q, want %q", got, want)
				}
			}
		})
	}

	t.Run("idle writers first", func(t *testing.T) {
		b := New(2000)
		b.Add(900)
		drains := make(chan struct{}, 16)
		r := Relief{Budget: b,
			Holders: func(add func(Holder)) {
				add(&holder{name: "a", st: Stat{Spare: 10}})
			},
			DrainIdle: func() int64 {
				b.Add(-500) // the idle writers held half the budget
				drains <- struct{}{}
				return 500
			},
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go r.Run(ctx)
		<-drains
		// Below flushAt now: no more drains, no requests; the next ticks
		// do nothing, which Used shows.
		if b.Used() != 400 {
			t.Errorf("used %d, want 400", b.Used())
		}
	})
}
