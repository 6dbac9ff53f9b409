package phppool_test

import (
	"context"
	"testing"

	"github.com/queuety-go/queuety/queuety/internal/phppool"
)

// BenchmarkPoolNoop measures the pool alone (no database): one noop PHP
// job per iteration through 4 processes, 16 callers at once.
//
//	go test -run '^$' -bench PoolNoop ./queuety/internal/phppool/
func BenchmarkPoolNoop(b *testing.B) {
	cmd := workerCommand(b)
	p, err := phppool.New(phppool.Config{Command: cmd, Workers: 4}, testLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer p.Stop(context.Background())
	j := job(b, 1, "ok", `{"n":1}`)
	b.SetParallelism(4) // 4 x GOMAXPROCS callers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := p.Handle(context.Background(), j); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
