package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/gompix/gompix/launcher"
)

// TestParsePlacement: the placement flags reach the launcher's Config, in
// mpirun's spellings too, and bad values are usage errors.
func TestParsePlacement(t *testing.T) {
	cfg, err := parseArgs(strings.Fields("-np 4 -map-by numa -bind-to core -report-bindings -mps -oversubscribe prog"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MapBy != launcher.MapByNUMA || cfg.BindTo != launcher.BindToCore || !cfg.ReportBindings || !cfg.MPS || !cfg.Oversubscribe {
		t.Errorf("config %+v", cfg)
	}
	if cfg, err = parseArgs(strings.Fields("--map-by gpu --bind-to=none prog")); err != nil || cfg.MapBy != launcher.MapByGPU || cfg.BindTo != launcher.BindToNone {
		t.Errorf("--map-by gpu --bind-to=none: %+v, %v", cfg, err)
	}
	for _, args := range []string{"--bind-to socket prog", "--map-by board prog", "--mps=maybe prog"} {
		var ue *usageError
		if _, err := parseArgs(strings.Fields(args)); err == nil || !errors.As(err, &ue) {
			t.Errorf("%s: %v, want a usage error", args, err)
		}
	}
}
