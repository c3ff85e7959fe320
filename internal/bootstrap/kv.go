package bootstrap

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// KV is the job's key-value store in the shape pt2pt/ucx takes (ucx.KV):
// what a rank Puts before a Fence, every rank can Get after it.
//
// PMI-2 and PMIx look a value up by the rank that put it, so every key
// names its owner as its last dash-separated part ("ucx-addr-3" is rank
// 3's, as ucx.AddrKey makes them); GetFrom names the owner explicitly.
type KV struct{ s session }

// Put publishes key=val (visible to every rank after the next Fence).
func (k *KV) Put(key string, val []byte) error { return k.s.put(key, val) }

// Fence returns once every rank has called it as often as this one.
func (k *KV) Fence(ctx context.Context) error { return k.s.fence(ctx) }

// Get reads key, put by the rank its last dash-separated part names.
func (k *KV) Get(ctx context.Context, key string) ([]byte, error) {
	r, ok := OwnerRank(key)
	if !ok {
		return nil, fmt.Errorf("bootstrap: key %q does not end in -RANK, the rank that put it", key)
	}
	return k.s.get(ctx, r, key)
}

// GetFrom reads key as rank put it.
func (k *KV) GetFrom(ctx context.Context, rank int, key string) ([]byte, error) {
	return k.s.get(ctx, rank, key)
}

// OwnerRank reads the rank a key ends with ("ucx-addr-3": 3).
func OwnerRank(key string) (int, bool) {
	i := strings.LastIndexByte(key, '-')
	if i < 0 {
		return 0, false
	}
	r, err := strconv.Atoi(key[i+1:])
	if err != nil || r < 0 || key[i+1] == '+' {
		return 0, false
	}
	return r, true
}
