package launcher

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/gompix/gompix/internal/wireup"
)

// agentPlace asks a host agent to place its ranks as the launcher places
// its own (placement.go), from the agent's host's topology.
type agentPlace struct {
	MapBy     string `json:"map_by"`
	BindTo    string `json:"bind_to"`
	Report    bool   `json:"report"`
	MPS       bool   `json:"mps"`
	LocalSize int    `json:"local_size"`
	SysRoot   string `json:"sys_root,omitempty"` // tests' fake /sys
}

// agentPlace is what an agent on pl's host needs to place its ranks, nil
// where no placement flag was given.
func (cfg *Config) agentPlace(pl placement) *agentPlace {
	if !cfg.placementOn() {
		return nil
	}
	return &agentPlace{MapBy: cfg.MapBy, BindTo: cfg.BindTo, Report: cfg.ReportBindings, MPS: cfg.MPS,
		LocalSize: pl.localSize, SysRoot: cfg.SysRoot}
}

// place chooses the bindings of the agent's ranks when the launcher asks,
// writing the shared-GPU warning and the --report-bindings lines on w (the
// launcher shows them prefixed with this host).
func (a *agent) place(gpuCount func([]string) int, gpuBus func([]string) []string, w io.Writer) error {
	pa := a.job.Place
	if pa == nil || len(a.job.Ranks) == 0 {
		return nil
	}
	// The ranks' environment decides which GPUs they see (-x CUDA_VISIBLE_DEVICES).
	env := append(os.Environ(), a.job.Ranks[0].Env...)
	cfg := Config{MapBy: pa.MapBy, BindTo: pa.BindTo, SysRoot: pa.SysRoot}
	if gpuBus != nil {
		cfg.GPUBusIDs = func() []string { return gpuBus(env) }
	}
	ngpus := 0
	if a.job.GPUBind && gpuCount != nil {
		ngpus = gpuCount(env)
		cfg.GPUCount = func() int { return ngpus }
	}
	binds, err := cfg.localBindings(pa.LocalSize, ngpus > 0)
	if err != nil {
		return err
	}
	a.binds = binds
	if msg := sharedGPUs(binds, pa.MPS || mpsRunning(env)); msg != "" {
		fmt.Fprintln(w, msg)
	}
	if pa.Report {
		for _, r := range a.job.Ranks {
			fmt.Fprintln(w, bindingLine(r.Rank, &binds[r.LocalRank]))
		}
	}
	return nil
}

// cpusOf is the CPUs the agent binds rank r to (nil: none).
func (a *agent) cpusOf(r agentRank) []int {
	if a.binds == nil || r.LocalRank >= len(a.binds) {
		return nil
	}
	return a.binds[r.LocalRank].CPUs
}

// bindEnv is what rank r's binding puts in its environment: its GPU, the
// nearest NIC, and GOMPIX_BIND=none under --bind-to none.
func (a *agent) bindEnv(r agentRank) []string {
	if r.LocalRank >= len(a.binds) {
		return nil
	}
	b := &a.binds[r.LocalRank]
	env := []string{wireup.EnvGPU + "=" + strconv.Itoa(b.GPU)}
	if b.NIC != "" {
		env = append(env, EnvNIC+"="+b.NIC)
	}
	if a.job.Place.BindTo == BindToNone && !userSet("GOMPIX_BIND", r.Env) {
		env = append(env, "GOMPIX_BIND=none")
	}
	return env
}
