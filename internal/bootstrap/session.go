package bootstrap

import (
	"context"
	"fmt"
	"sync"

	"github.com/gompix/gompix/internal/pmi2"
	"github.com/gompix/gompix/internal/pmix"
	"github.com/gompix/gompix/internal/wireup"
)

// gompirunSession is gompirun's store; its keys are global, so a get
// needs no owner.
type gompirunSession struct{ c *wireup.Client }

func (g gompirunSession) put(key string, val []byte) error { return g.c.Put(key, val) }
func (g gompirunSession) fence(ctx context.Context) error  { return g.c.Fence(ctx) }
func (g gompirunSession) get(ctx context.Context, _ int, key string) ([]byte, error) {
	return g.c.Get(ctx, key)
}
func (g gompirunSession) finalize(ctx context.Context) error { return g.c.Finalize(ctx) }
func (g gompirunSession) abort(int, string) error            { return nil }
func (g gompirunSession) close() error                       { return g.c.Close() }

// pmi2Session is a PMI-2 server; binary values travel as PutBytes'
// base64 pieces.
type pmi2Session struct{ c *pmi2.Client }

func (p *pmi2Session) put(key string, val []byte) error { return p.c.PutBytes(key, val) }

// fence bounds the PMI-2 fence (which has no deadline of its own) by ctx:
// when ctx ends first the connection is closed, which ends the call.
func (p *pmi2Session) fence(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { p.c.Close() })
	err := p.c.Fence()
	if !stop() {
		return fmt.Errorf("pmi2: fence: %w (the connection to the PMI server is closed)", ctx.Err())
	}
	return err
}

func (p *pmi2Session) get(_ context.Context, rank int, key string) ([]byte, error) {
	return p.c.GetBytes(rank, key)
}
func (p *pmi2Session) finalize(context.Context) error { return p.c.Finalize() }
func (p *pmi2Session) abort(code int, msg string) error {
	return p.c.Abort(code, msg)
}
func (p *pmi2Session) close() error { return p.c.Close() }

// pmixSession is libpmix. Puts are committed at the fence, which collects
// every rank's data, so gets after it are local.
type pmixSession struct {
	c *pmix.Client
	// fenceMu keeps fences in order: one collective at a time per rank.
	fenceMu sync.Mutex
}

func (p *pmixSession) put(key string, val []byte) error { return p.c.Put(key, val) }

// fence runs PMIx's (which has no deadline of its own) on its own
// goroutine, so ctx bounds the wait; the launcher ends the job when a rank
// dies, which ends a fence left behind.
func (p *pmixSession) fence(ctx context.Context) error {
	p.fenceMu.Lock()
	done := make(chan error, 1)
	go func() {
		defer p.fenceMu.Unlock()
		err := p.c.Commit()
		if err == nil {
			err = p.c.Fence(true)
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("pmix: fence: %w", ctx.Err())
	}
}

func (p *pmixSession) get(_ context.Context, rank int, key string) ([]byte, error) {
	return p.c.GetBytes(rank, key)
}
func (p *pmixSession) finalize(context.Context) error { return p.c.Finalize() }
func (p *pmixSession) abort(code int, msg string) error {
	return p.c.Abort(code, msg)
}

// close leaves PMIx as it is unless finalized: PMIx_Finalize would tell
// the launcher this rank ended well, which a rank that failed must not.
func (p *pmixSession) close() error { return nil }

// localSession is a singleton's store: a map, fences immediate.
type localSession struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newLocal() *localSession { return &localSession{m: map[string][]byte{}} }

func (l *localSession) put(key string, val []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[key] = append([]byte(nil), val...)
	return nil
}
func (l *localSession) fence(context.Context) error { return nil }
func (l *localSession) get(_ context.Context, _ int, key string) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.m[key]
	if !ok {
		return nil, fmt.Errorf("bootstrap: key %q: not published by this process, the job's only one", key)
	}
	return v, nil
}
func (l *localSession) finalize(context.Context) error { return nil }
func (l *localSession) abort(int, string) error        { return nil }
func (l *localSession) close() error                   { return nil }
