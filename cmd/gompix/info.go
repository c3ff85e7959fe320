package main

import (
	"errors"
	"fmt"
	gpucoll "github.com/gompix/gompix/coll/gpu"
	"github.com/gompix/gompix/kernels"
	"github.com/gompix/gompix/pt2pt"
	gpupath "github.com/gompix/gompix/pt2pt/gpu"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	_ "github.com/gompix/gompix/coll" // registers GOMPIX_<COLL>_ALGORITHM
	"github.com/gompix/gompix/internal/bootstrap"
	"github.com/gompix/gompix/internal/buildinfo"
	"github.com/gompix/gompix/internal/config"
	"github.com/gompix/gompix/internal/cudadrv"
	"github.com/gompix/gompix/internal/gputopo"
	"github.com/gompix/gompix/ucxbind"
)

func newInfoCmd() *cobra.Command {
	var markdown, peers, asJSON bool
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Describe this installation: UCX, CUDA, GPUs and their links, configuration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if markdown {
				return writeConfigPage(cmd.OutOrStdout())
			}
			if peers {
				return writePeers(cmd.OutOrStdout())
			}
			if asJSON {
				return writeInfoJSON(cmd.OutOrStdout())
			}
			return writeInfo(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the GOMPIX_* variables as the Markdown page docs/guide/configuration.md")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the same facts as one JSON document (with each GPU's CPU and NUMA affinity and the NICs)")
	cmd.Flags().BoolVar(&peers, "peers", false, "as every rank of a job (gompirun -n N gompix info --peers): how each rank reaches each other, and why")
	return cmd
}

// writeInfo prints what gompix sees on this machine. Every probe that fails
// says why on its own line; a machine without a GPU is a normal answer.
func writeInfo(w io.Writer) error {
	fmt.Fprintln(w, "gompix", buildinfo.Version())
	ucxCUDA := false
	maj, min, rel := ucxbind.Version()
	fmt.Fprintf(w, "UCX: %d.%d.%d\n", maj, min, rel)
	if ctx, err := ucxbind.NewContext(ucxbind.ContextParams{}); err != nil {
		fmt.Fprintf(w, "  context: %v\n", err)
	} else {
		mt := ctx.MemoryTypes()
		ucxCUDA = mt&ucxbind.MemCUDA != 0
		kinds := []string{}
		if mt&ucxbind.MemHost != 0 {
			kinds = append(kinds, "host")
		}
		if mt&ucxbind.MemCUDA != 0 {
			kinds = append(kinds, "cuda")
		}
		if mt&ucxbind.MemCUDAManaged != 0 {
			kinds = append(kinds, "cuda-managed")
		}
		fmt.Fprintf(w, "  memory types: %s\n", strings.Join(kinds, ", "))
		if mt&ucxbind.MemCUDA == 0 {
			fmt.Fprintln(w, "  (this UCX build has no CUDA transports)")
		}
		ctx.Close()
	}
	if d, err := cudadrv.Open(); err != nil {
		if errors.Is(err, cudadrv.ErrNoDriver) {
			fmt.Fprintln(w, "CUDA: no GPU (no CUDA driver found)")
		} else {
			fmt.Fprintf(w, "CUDA: %v\n", err)
		}
	} else {
		v := d.Version()
		fmt.Fprintf(w, "CUDA: driver API %d.%d, %d device(s), loaded via %s\n", v/1000, v%1000/10, d.DeviceCount(), cudadrv.LoadedVia(d))
	}
	topo, err := gputopo.Discover()
	switch {
	case errors.Is(err, gputopo.ErrNoNVML):
		fmt.Fprintln(w, "GPUs: none (NVML not available)")
	case err != nil:
		fmt.Fprintf(w, "GPUs: %v\n", err)
	default:
		fmt.Fprintf(w, "GPUs: %d (NVIDIA driver %s)\n", len(topo.GPUs), topo.DriverVersion)
		for _, g := range topo.GPUs {
			fmt.Fprintf(w, "  GPU%d  %s  %.1f GiB  %s\n", g.Index, g.Name, float64(g.MemoryBytes)/(1<<30), g.PCIBusID)
		}
		if len(topo.GPUs) > 1 {
			fmt.Fprint(w, "  peer links:\n       ")
			for j := range topo.GPUs {
				fmt.Fprintf(w, " %6s", fmt.Sprintf("GPU%d", j))
			}
			fmt.Fprintln(w)
			for i := range topo.GPUs {
				fmt.Fprintf(w, "    GPU%d", i)
				for j := range topo.GPUs {
					s := "X"
					if i != j {
						s = topo.Links[i][j].String()
					}
					fmt.Fprintf(w, " %6s", s)
				}
				fmt.Fprintln(w)
			}
		}
	}
	writeAffinity(w)
	writeGPUPaths(w, ucxCUDA)
	writeGPUCollectives(w)
	writeLaunch(w)
	fmt.Fprintln(w, "Configuration (GOMPIX_*):")
	for _, v := range config.Vars() {
		fmt.Fprintf(w, "  %s=%s\n      %s (currently %q)\n", v.Name, v.Default, v.Description, v.Raw())
	}
	return nil
}

// writeLaunch names the launcher this process would join (without joining)
// and this node's identity, which ranks compare to find their node.
func writeLaunch(w io.Writer) {
	fmt.Fprintf(w, "Launcher: %s\n", bootstrap.Detect(os.Getenv))
	fmt.Fprintf(w, "  node key: %s\n", bootstrap.NodeKey())
}

// writeGPUPaths says which path device buffers take between two ranks, as
// the point-to-point selector (pt2pt/gpu.Select) decides it under the
// current configuration, for a peer on this node and on another one.
func writeGPUPaths(w io.Writer, ucxCUDA bool) {
	cfg, err := gpupath.FromEnv(gpupath.Config{})
	if err != nil {
		fmt.Fprintf(w, "GPU point-to-point paths: %v\n", err)
		return
	}
	fmt.Fprintf(w, "GPU point-to-point paths (GOMPIX_GPU_PATH=%s, GOMPIX_IPC_THRESHOLD=%d):\n", cfg.Mode, cfg.IPCThreshold)
	for _, peer := range []struct {
		name string
		same bool
	}{{"peer on this node", true}, {"peer on another node", false}} {
		for _, n := range []int{8, 1 << 20, 64 << 20} {
			p, why := gpupath.Select(gpupath.Message{Kind: pt2pt.Device, Len: n, SameNode: peer.same,
				TransportDevice: ucxCUDA, Mode: cfg.Mode, Threshold: cfg.IPCThreshold, UCXFrom: cfg.UCXFrom})
			fmt.Fprintf(w, "  %-20s %9d B: %s (%s)\n", peer.name, n, p, why)
		}
	}
}

// writeGPUCollectives says how collectives on device buffers run under the
// current configuration (docs/design/collectives.md).
func writeGPUCollectives(w io.Writer) {
	st := gpucoll.CurrentSettings()
	fmt.Fprintln(w, "GPU collectives (device buffers):")
	if st.Direct == "off" {
		fmt.Fprintln(w, "  IPC-direct engine off (GOMPIX_GPU_COLL_DIRECT=off): message schedules over the GPU point-to-point paths, reductions in device kernels")
		return
	}
	fmt.Fprintf(w, "  ranks on this node, one GPU each, up to %d: IPC-direct engine, set up by the first blocking collective after a device one\n", kernels.MaxInputs)
	fmt.Fprintf(w, "    up to %d B exposed: one fused kernel (GOMPIX_GPU_COLL_FUSED)\n", min(st.Fused, st.Staging))
	fmt.Fprintf(w, "    up to %d B: pre-mapped staging slots (GOMPIX_GPU_COLL_STAGING)\n", st.Staging)
	fmt.Fprintf(w, "    beyond: the user's buffers mapped through IPC handles; allreduce form %s (GOMPIX_GPU_COLL_ALLREDUCE_MAPPED)\n", st.Mapped)
	fmt.Fprintf(w, "    flags: %s (GOMPIX_GPU_COLL_FLAGS)\n", st.Flags)
	fmt.Fprintln(w, "  otherwise (other nodes, shared GPUs, more ranks): message schedules over the GPU point-to-point paths, reductions in device kernels")
}
