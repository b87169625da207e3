package source

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// progress shows how far the replay is: a bar redrawn in place with the
// rate and the ETA on a terminal, a log line every interval otherwise. The
// fraction done is by bytes of the planned files.
type progress struct {
	r     *Replayer
	total int64 // bytes of the planned files
	start time.Time
	now   func() time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
}

func (r *Replayer) startProgress(ctx context.Context, total int64) *progress {
	p := &progress{r: r, total: total, start: time.Now(), now: time.Now, stop: make(chan struct{})}
	o := &r.opts
	every, show := o.ProgressInterval, p.logLine
	if o.ProgressBar && o.Progress != nil {
		every, show = 200*time.Millisecond, p.drawBar
	}
	p.wg.Add(1)
	go p.loop(ctx, every, show)
	return p
}

func (p *progress) loop(ctx context.Context, every time.Duration, show func(final bool)) {
	defer p.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			show(false)
		case <-ctx.Done():
			show(true)
			return
		case <-p.stop:
			show(true)
			return
		}
	}
}

// finish draws the last state and stops.
func (p *progress) finish() {
	close(p.stop)
	p.wg.Wait()
}

// state returns records produced, their rate per second, the fraction of
// bytes done and the estimated time left (negative when unknown).
func (p *progress) state() (records int64, rate, frac float64, eta time.Duration) {
	st := &p.r.stats
	records = st.Records.Load()
	elapsed := p.now().Sub(p.start).Seconds()
	if elapsed > 0 {
		rate = float64(records) / elapsed
	}
	eta = -1
	if p.total > 0 {
		frac = min(float64(st.BytesDone.Load())/float64(p.total), 1)
		if frac > 0 {
			eta = time.Duration(elapsed / frac * (1 - frac) * float64(time.Second))
		}
	}
	return records, rate, frac, eta
}

func (p *progress) logLine(final bool) {
	if final {
		return // Run logs the outcome
	}
	records, rate, frac, eta := p.state()
	args := []any{"records", records, "records_per_s", int64(rate), "percent", fmt.Sprintf("%.1f", 100*frac)}
	if eta >= 0 {
		args = append(args, "eta", eta.Round(time.Second).String())
	}
	p.r.opts.Log.Info("replay progress", args...)
}

func (p *progress) drawBar(final bool) {
	records, rate, frac, eta := p.state()
	const width = 30
	filled := int(frac * width)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	etaText := "--:--"
	if eta >= 0 {
		etaText = fmtDuration(eta)
	}
	end := ""
	if final {
		end = "\n"
		etaText = fmtDuration(p.now().Sub(p.start))
	}
	fmt.Fprintf(p.r.opts.Progress, "\r[%s] %5.1f%% %s records %s/s ETA %s \x1b[K%s",
		bar, 100*frac, count(records), count(int64(rate)), etaText, end)
}

// count renders n shortly: 950, 12.3k, 4.56M.
func count(n int64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func fmtDuration(d time.Duration) string {
	s := int64(d.Round(time.Second).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
