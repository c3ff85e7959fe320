package osu

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func mustLookup(t *testing.T, name string) *Benchmark {
	t.Helper()
	b, ok := Lookup(name)
	if !ok {
		t.Fatalf("no benchmark %q", name)
	}
	return b
}

func TestDefaults(t *testing.T) {
	cases := []struct {
		name                    string
		min, max                int
		iters, skip, itL, skipL int
	}{
		{"latency", 0, 4 << 20, 10000, 100, 1000, 10},
		{"osu_latency", 0, 4 << 20, 10000, 100, 1000, 10},
		{"multi_lat", 0, 4 << 20, 10000, 100, 1000, 10},
		{"bw", 1, 4 << 20, 100, 10, 20, 2},
		{"bibw", 1, 4 << 20, 100, 10, 20, 2},
		{"mbw_mr", 1, 4 << 20, 100, 10, 20, 2},
	}
	for _, tc := range cases {
		o, err := Parse(mustLookup(t, tc.name), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := []int{o.MinSize, o.MaxSize, o.Iterations, o.Skip, o.IterationsLarge, o.SkipLarge, o.Window}
		want := []int{tc.min, tc.max, tc.iters, tc.skip, tc.itL, tc.skipL, 64}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: min,max,iters,skip,itersLarge,skipLarge,window = %v, want %v", tc.name, got, want)
		}
		if !reflect.DeepEqual(o.Types, []Datatype{Char}) || o.Src != Host || o.Dst != Host {
			t.Errorf("%s: types %v placement %s %s", tc.name, o.Types, o.Src, o.Dst)
		}
		if it, sk := o.iterationsFor(8192); it != tc.iters || sk != tc.skip {
			t.Errorf("%s: 8192 B uses %d+%d", tc.name, it, sk)
		}
		if it, sk := o.iterationsFor(8193); it != tc.itL || sk != tc.skipL {
			t.Errorf("%s: 8193 B uses %d+%d", tc.name, it, sk)
		}
	}
}

func TestParse(t *testing.T) {
	lat := mustLookup(t, "latency")
	bw := mustLookup(t, "bw")
	mbw := mustLookup(t, "mbw_mr")
	sar := mustLookup(t, "stream_allreduce")
	cases := []struct {
		b     *Benchmark
		args  []string
		check func(o Options) bool
	}{
		{lat, []string{"-m", "1:4194304"}, func(o Options) bool { return o.MinSize == 1 && o.MaxSize == 4194304 }},
		{lat, []string{"-m1:1024"}, func(o Options) bool { return o.MinSize == 1 && o.MaxSize == 1024 }},
		{lat, []string{"-m", "128"}, func(o Options) bool { return o.MinSize == 0 && o.MaxSize == 128 }},
		{lat, []string{"-m", "2:"}, func(o Options) bool { return o.MinSize == 2 && o.MaxSize == 4<<20 }},
		{lat, []string{"-m", ":64"}, func(o Options) bool { return o.MinSize == 0 && o.MaxSize == 64 }},
		{lat, []string{"-m", "4K:1M"}, func(o Options) bool { return o.MinSize == 4096 && o.MaxSize == 1<<20 }},
		{lat, []string{"--message-size=8:16"}, func(o Options) bool { return o.MinSize == 8 && o.MaxSize == 16 }},
		{lat, []string{"--iterations", "7", "--warmup=3"}, func(o Options) bool {
			return o.Iterations == 7 && o.IterationsLarge == 7 && o.Skip == 3 && o.SkipLarge == 3
		}},
		{lat, []string{"-i", "10", "-x", "2"}, func(o Options) bool {
			return o.Iterations == 10 && o.IterationsLarge == 10 && o.Skip == 2 && o.SkipLarge == 2
		}},
		{lat, []string{"-c"}, func(o Options) bool { return o.Validate && o.ValidationWarmup == 5 }},
		{lat, []string{"-h"}, func(o Options) bool { return o.Help }},
		{lat, []string{"-v"}, func(o Options) bool { return o.Version }},
		{lat, []string{"-c", "-i5"}, func(o Options) bool { return o.Validate && o.Iterations == 5 }},
		{lat, []string{"-d", "cuda", "D", "D"}, func(o Options) bool {
			return o.Accel == AccelCUDA && o.Src == Device && o.Dst == Device
		}},
		{lat, []string{"H", "D"}, func(o Options) bool { return o.Accel == AccelCUDA && o.Src == Host && o.Dst == Device }},
		{lat, []string{"MD", "MH"}, func(o Options) bool {
			return o.Accel == AccelManaged && o.Src == ManagedDevice && o.Dst == ManagedHost
		}},
		{lat, []string{"H", "H"}, func(o Options) bool { return o.Accel == AccelNone }},
		{lat, []string{"-T", "mpi_float", "-T", "MPI_INT"}, func(o Options) bool {
			return reflect.DeepEqual(o.Types, []Datatype{Float, Int})
		}},
		{lat, []string{"-T", "all"}, func(o Options) bool { return reflect.DeepEqual(o.Types, []Datatype{Char, Int, Float}) }},
		{bw, []string{"-W", "32", "-b", "multiple"}, func(o Options) bool { return o.Window == 32 && o.MultipleBuffers }},
		{mbw, []string{"-p", "2", "-R", "0"}, func(o Options) bool { return o.Pairs == 2 && !o.PrintRate }},
		{lat, []string{"--", "H", "H"}, func(o Options) bool { return o.Src == Host }},
		// The placement may come before or between the options, as in OSU.
		{lat, []string{"D", "H", "-d", "cuda", "-m", "8"}, func(o Options) bool {
			return o.Accel == AccelCUDA && o.Src == Device && o.Dst == Host && o.MaxSize == 8
		}},
		{lat, []string{"-i", "3", "H", "D", "-m", "8"}, func(o Options) bool {
			return o.Src == Host && o.Dst == Device && o.Iterations == 3 && o.MaxSize == 8
		}},
		// A collective, enqueued or not: -d alone puts its buffers on the device.
		{sar, []string{"-d", "cuda"}, func(o Options) bool { return o.Src == Device && o.Dst == Device }},
		{sar, nil, func(o Options) bool { return o.Src == Host && o.Accel == AccelNone }},
		// -z: bare for P50, P90, P99; a list only attached, as getopt's
		// optional argument.
		{lat, nil, func(o Options) bool { return o.TailPercentiles == nil }},
		{lat, []string{"-z"}, func(o Options) bool { return reflect.DeepEqual(o.TailPercentiles, []int{50, 90, 99}) }},
		{lat, []string{"-z50,99"}, func(o Options) bool { return reflect.DeepEqual(o.TailPercentiles, []int{50, 99}) }},
		{lat, []string{"-z1,25,50,75,99", "-i", "5"}, func(o Options) bool {
			return reflect.DeepEqual(o.TailPercentiles, []int{1, 25, 50, 75, 99}) && o.Iterations == 5
		}},
		{lat, []string{"--tail-lat"}, func(o Options) bool { return reflect.DeepEqual(o.TailPercentiles, []int{50, 90, 99}) }},
		{bw, []string{"--tail-lat=95"}, func(o Options) bool { return reflect.DeepEqual(o.TailPercentiles, []int{95}) }},
		{mustLookup(t, "allreduce"), []string{"-fz"}, func(o Options) bool {
			return o.Full && reflect.DeepEqual(o.TailPercentiles, []int{50, 90, 99})
		}},
		{mustLookup(t, "ibarrier"), []string{"-z10"}, func(o Options) bool { return reflect.DeepEqual(o.TailPercentiles, []int{10}) }},
	}
	for _, tc := range cases {
		o, err := Parse(tc.b, tc.args)
		if err != nil {
			t.Errorf("%s %q: %v", tc.b.name, tc.args, err)
			continue
		}
		if !tc.check(o) {
			t.Errorf("%s %q: unexpected options %+v", tc.b.name, tc.args, o)
		}
	}
}

func TestParseErrors(t *testing.T) {
	const badTail = "Invalid percentile list (1 to 5 comma-separated percentiles, each 1-99)"
	lat := mustLookup(t, "latency")
	bw := mustLookup(t, "bw")
	cases := []struct {
		b    *Benchmark
		args []string
		want string
	}{
		{lat, []string{"-q"}, "Invalid option [-q]"},
		{lat, []string{"-f"}, "Invalid option [-f]"}, // osu_latency has no -f in 7.4
		{lat, []string{"-W", "4"}, "Invalid option [-W]"},
		{bw, []string{"-f"}, "Invalid option [-f]"},
		{lat, []string{"-m"}, "Option Missing Required Argument [-m]"},
		{lat, []string{"-m", "x"}, "Invalid Message Size [-m x]"},
		{lat, []string{"-m", "0:8"}, "Invalid Message Size [-m 0:8]"},
		{lat, []string{"-m", "1:2:3"}, "Invalid Message Size [-m 1:2:3]"},
		{lat, []string{"-i", "0"}, "Invalid Number of Iterations [-i 0]"},
		{lat, []string{"-x", "-1"}, "Invalid Number of Warmup Iterations [-x -1]"},
		{bw, []string{"-W", "0"}, "Invalid Window Size [-W 0]"},
		{lat, []string{"-d", "opencl"}, "Invalid Accel Type Specified [-d opencl]"},
		{lat, []string{"-T", "mpi_double"}, "Invalid Datatype [-T mpi_double]"},
		{lat, []string{"D"}, "Expected buffer placement SRC DST (H, D, MH or MD) [D]"},
		{lat, []string{"D", "-m", "8", "D", "H"}, "Expected buffer placement SRC DST (H, D, MH or MD) [D D H]"},
		{lat, []string{"X", "H"}, "Invalid buffer placement (want H, D, MH or MD) [X]"},
		{lat, []string{"-z0"}, badTail + " [-z 0]"},
		{lat, []string{"-z100"}, badTail + " [-z 100]"},
		{lat, []string{"-z50,"}, badTail + " [-z 50,]"},
		{lat, []string{"-z,50"}, badTail + " [-z ,50]"},
		{lat, []string{"-zabc"}, badTail + " [-z abc]"},
		{lat, []string{"-z-5"}, badTail + " [-z -5]"},
		{lat, []string{"-z1,2,3,4,5,6"}, badTail + " [-z 1,2,3,4,5,6]"},
		{lat, []string{"--tail-lat="}, badTail + " [--tail-lat]"},
		{bw, []string{"--tail-lat=50;90"}, badTail + " [--tail-lat 50;90]"},
		// The list must be attached: a separate word is a placement.
		{lat, []string{"-z", "50"}, "Expected buffer placement SRC DST (H, D, MH or MD) [50]"},
		{mustLookup(t, "stream_latency"), []string{"-z"}, "Tail latency is not supported by osu_stream_latency [-z]"},
		{lat, []string{"--nope"}, "Invalid option [--nope]"},
		{lat, []string{"--nccl-bw"}, "Invalid option [--nccl-bw]"},
		{lat, []string{"--help=1"}, "Option takes no argument [--help 1]"},
	}
	for _, tc := range cases {
		_, err := Parse(tc.b, tc.args)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%s %q: error %v, want a UsageError", tc.b.name, tc.args, err)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.b.name, tc.args, err, tc.want)
		}
	}
}

func TestSizes(t *testing.T) {
	o := Options{MinSize: 0, MaxSize: 8}
	if got, want := o.sizes(), []int{0, 1, 2, 4, 8}; !reflect.DeepEqual(got, want) {
		t.Errorf("sizes %v, want %v", got, want)
	}
	o = Options{MinSize: 3, MaxSize: 20}
	if got, want := o.sizes(), []int{3, 6, 12}; !reflect.DeepEqual(got, want) {
		t.Errorf("sizes %v, want %v", got, want)
	}
	e := &env{o: &Options{MinSize: 0, MaxSize: 16}, dt: Float}
	if got, want := e.sizes(), []int{4, 8, 16}; !reflect.DeepEqual(got, want) {
		t.Errorf("float sizes %v, want %v", got, want)
	}
	// OSU 7.4's osu_latency starts at 1 byte: a 0-byte message has no
	// element, and OSU skips it.
	o, err := Parse(mustLookup(t, "latency"), []string{"-m", "8"})
	if err != nil {
		t.Fatal(err)
	}
	e = &env{o: &o, dt: Char}
	if got, want := e.sizes(), []int{1, 2, 4, 8}; !reflect.DeepEqual(got, want) {
		t.Errorf("latency sizes %v, want %v", got, want)
	}
}

// TestCUDAWithoutGPURefused: "-d cuda" on a machine without a usable GPU
// fails before the run, whatever the placement, and passes with one.
func TestCUDAWithoutGPURefused(t *testing.T) {
	old := deviceAllocator
	defer func() { deviceAllocator = old }()
	noGPU := func(Datatype, int) (benchBuffer, error) {
		return nil, fmt.Errorf("%w: no CUDA driver", ErrDeviceUnsupported)
	}
	gpu := func(d Datatype, n int) (benchBuffer, error) { return newHostBuffer[int8](n), nil }
	for _, args := range [][]string{
		{"latency", "-d", "cuda"},
		{"latency", "-d", "cuda", "H", "H"},
		{"bw", "-d", "cuda"},
		{"allreduce", "-d", "cuda"},
		{"latency", "H", "D"},
	} {
		o, err := Parse(mustLookup(t, args[0]), args[1:])
		if err != nil {
			t.Fatal(err)
		}
		deviceAllocator = noGPU
		if err := checkPlacement(&o); !errors.Is(err, ErrDeviceUnsupported) {
			t.Errorf("%q without a GPU: %v, want ErrDeviceUnsupported", args, err)
		}
		deviceAllocator = gpu
		if err := checkPlacement(&o); err != nil {
			t.Errorf("%q with a GPU: %v", args, err)
		}
	}
}

// TestTitles: the titles OSU 7.4 prints, where they are not the blocking
// title with "Non-blocking" before it, and the v-variants.
func TestTitles(t *testing.T) {
	for name, want := range map[string]string{
		"ialltoall":   "Non-blocking All-to-All Latency Test",
		"ibcast":      "Non-Blocking Broadcast Latency Test",
		"iallreduce":  "Non-blocking Allreduce Latency Test",
		"alltoall":    "All-to-All Personalized Exchange Latency Test",
		"allgatherv":  "Allgatherv Latency Test",
		"iallgatherv": "Non-blocking Allgatherv Latency Test",
		"alltoallv":   "All-to-Allv Personalized Exchange Latency Test",
		"ialltoallv":  "Non-blocking All-to-Allv Personalized Exchange Latency Test",
		"gatherv":     "Gatherv Latency Test",
		"igatherv":    "Non-blocking Gatherv Latency Test",
		"scatterv":    "Scatterv Latency Test",
		"iscatterv":   "Non-blocking Scatterv Latency Test",
	} {
		b, ok := Lookup(name)
		if !ok {
			t.Errorf("no benchmark %q", name)
			continue
		}
		if b.Title() != want {
			t.Errorf("%s: title %q, want %q", name, b.Title(), want)
		}
	}
	// -k (the root) only where the operation has one.
	for name, hasRoot := range map[string]bool{"gatherv": true, "iscatterv": true, "allgatherv": false, "ialltoallv": false} {
		_, err := Parse(mustLookup(t, name), []string{"-k", "rotate"})
		if (err == nil) != hasRoot {
			t.Errorf("%s -k rotate: %v", name, err)
		}
	}
}

func TestDevicePlacementRefused(t *testing.T) {
	o, err := Parse(mustLookup(t, "latency"), []string{"-d", "cuda", "D", "D"})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPlacement(&o); !errors.Is(err, ErrDeviceUnsupported) {
		t.Errorf("checkPlacement: %v, want ErrDeviceUnsupported", err)
	}
	if _, err := allocBuffer(Char, Device, 8); !errors.Is(err, ErrDeviceUnsupported) {
		t.Errorf("allocBuffer(D): %v", err)
	}
	if _, err := allocBuffer(Char, ManagedHost, 8); !errors.Is(err, ErrDeviceUnsupported) {
		t.Errorf("allocBuffer(MH): %v", err)
	}
}

func TestBufferPatterns(t *testing.T) {
	for _, d := range []Datatype{Char, Int, Float} {
		b, err := allocBuffer(d, Host, 300)
		if err != nil {
			t.Fatal(err)
		}
		b.Fill(300, poison(300, 2, 1))
		if bad := b.Check(300, pattern(300, 2, 1)); bad != 300 {
			t.Errorf("%s: poisoned buffer has %d mismatches, want 300", d.MPIName(), bad)
		}
		b.Fill(300, pattern(300, 2, 1))
		if bad := b.Check(300, pattern(300, 2, 1)); bad != 0 {
			t.Errorf("%s: %d mismatches", d.MPIName(), bad)
		}
		if b.View(10).Len() != 10 {
			t.Errorf("%s: view length", d.MPIName())
		}
	}
}

// TestParseForms: getopt's spellings, each as OSU 7.4 reads it: attached or
// separate values, clusters, optional values only attached, long options,
// a value that looks like an option, parsing ending at -h and -v.
func TestParseForms(t *testing.T) {
	lat := mustLookup(t, "latency")
	ar := mustLookup(t, "allreduce")
	nbc := mustLookup(t, "iallreduce")
	cases := []struct {
		b     *Benchmark
		args  []string
		check func(o Options) bool
		err   string
	}{
		{lat, []string{"-i5", "-x0", "-m8"}, func(o Options) bool { return o.Iterations == 5 && o.Skip == 0 && o.MaxSize == 8 }, ""},
		{ar, []string{"-fm", "8"}, func(o Options) bool { return o.Full && o.MaxSize == 8 }, ""},
		{ar, []string{"-fm8"}, func(o Options) bool { return o.Full && o.MaxSize == 8 }, ""},
		{ar, []string{"-fzc"}, nil, "Invalid percentile list (1 to 5 comma-separated percentiles, each 1-99) [-z c]"},
		{ar, []string{"-fcm8"}, nil, "Validation logging is not supported by gompix [-c m8]"}, // an optional value takes the rest
		{ar, []string{"-zfc"}, nil, "Invalid percentile list (1 to 5 comma-separated percentiles, each 1-99) [-z fc]"},
		{ar, []string{"-fc", "-z"}, func(o Options) bool { return o.Full && o.Validate && len(o.TailPercentiles) == 3 }, ""},
		{ar, []string{"-fz50"}, func(o Options) bool { return o.Full && reflect.DeepEqual(o.TailPercentiles, []int{50}) }, ""},
		{ar, []string{"--full", "--validation", "--type", "mpi_int", "--type=mpi_float"}, func(o Options) bool {
			return o.Full && o.Validate && reflect.DeepEqual(o.Types, []Datatype{Int, Float})
		}, ""},
		{ar, []string{"--nccl-bw", "-M", "1K"}, func(o Options) bool { return o.NCCLBandwidth && o.MemLimit == maxMemLowerLimit }, ""},
		{nbc, []string{"-t", "3", "-k", "rotate"}, nil, "Invalid option [-k]"},
		{nbc, []string{"-t3", "--num-test-calls=4"}, func(o Options) bool { return o.TestCalls == 4 }, ""},
		{lat, []string{"-c", "H", "H"}, func(o Options) bool { return o.Validate && o.Src == Host }, ""},
		{lat, []string{"-h", "-q"}, func(o Options) bool { return o.Help }, ""},
		{lat, []string{"-v", "--bogus"}, func(o Options) bool { return o.Version }, ""},
		{lat, []string{"-", "H"}, nil, "Invalid buffer placement (want H, D, MH or MD) [-]"},
		{lat, []string{"-m=8"}, nil, "Invalid Message Size [-m =8]"},
		{lat, []string{"-z=50"}, nil, "Invalid percentile list (1 to 5 comma-separated percentiles, each 1-99) [-z =50]"},
		{lat, []string{"-m", "-5"}, nil, "Invalid Message Size [-m -5]"},
		{lat, []string{"-T", "-z"}, nil, "Invalid Datatype [-T -z]"},
		{lat, []string{"--message-size", "-z5"}, nil, "Invalid Message Size [--message-size -z5]"},
		{lat, []string{"--iterations"}, nil, "Option Missing Required Argument [--iterations]"},
		{lat, []string{"-cx"}, nil, "Validation logging is not supported by gompix [-c x]"},
		{lat, []string{"--validation=x"}, nil, "Validation logging is not supported by gompix [--validation x]"},
		{lat, []string{"-G", "x"}, nil, "Graph output is not supported by gompix [-G]"},
		{lat, []string{"--graph=x"}, nil, "Graph output is not supported by gompix [--graph]"},
		{lat, []string{"-I"}, nil, "MPI sessions are not supported by gompix [-I]"},
		{ar, []string{"--full=1"}, nil, "Option takes no argument [--full 1]"},
		{ar, []string{"--nccl-bw=yes"}, nil, "Option takes no argument [--nccl-bw yes]"},
		{lat, []string{"-cq"}, nil, "Validation logging is not supported by gompix [-c q]"},
		{lat, []string{"-i", "0", "-q"}, nil, "Invalid Number of Iterations [-i 0]"},
		{lat, []string{"-q", "-i", "0"}, nil, "Invalid option [-q]"},
		{lat, []string{"-test.v"}, nil, "Invalid option [-t]"},
		{lat, []string{"---m", "8"}, nil, "Invalid option [---m]"},
		{lat, []string{"--m", "8"}, nil, "Invalid option [--m]"},
		{lat, []string{"--", "-m", "8"}, nil, "Invalid buffer placement (want H, D, MH or MD) [-m]"},
		// Values pflag alone would read otherwise (Flags, getoptForms):
		// empty, starting with "=", looking like an option or like "--".
		{lat, []string{"-m", ""}, nil, "Invalid Message Size [-m]"},
		{lat, []string{"--iterations="}, nil, "Invalid Number of Iterations [--iterations]"},
		{lat, []string{"-m==8"}, nil, "Invalid Message Size [-m ==8]"},
		{lat, []string{"--message-size==8"}, nil, "Invalid Message Size [--message-size =8]"},
		{lat, []string{"-i", "--", "H", "H"}, nil, "Invalid Number of Iterations [-i --]"},
		{lat, []string{"--iterations", "-h"}, nil, "Invalid Number of Iterations [--iterations -h]"},
		{lat, []string{"-i0q"}, nil, "Invalid Number of Iterations [-i 0q]"},
		{lat, []string{"--help=", "x"}, nil, "Option takes no argument [--help]"},
		{lat, []string{"-c="}, nil, "Validation logging is not supported by gompix [-c =]"},
		// Parsing ends at -h or -v inside a cluster and after the long forms.
		{lat, []string{"-hz0"}, func(o Options) bool { return o.Help && o.TailPercentiles == nil }, ""},
		{lat, []string{"-vh"}, func(o Options) bool { return o.Version && !o.Help }, ""},
		{lat, []string{"--version", "-q"}, func(o Options) bool { return o.Version }, ""},
		{lat, []string{"--help", "--bogus"}, func(o Options) bool { return o.Help }, ""},
		// Letters that are no option, named as typed.
		{ar, []string{"-f="}, nil, "Invalid option [-=]"},
		{ar, []string{"-f-"}, nil, "Invalid option [--]"},
		{ar, []string{"-fq"}, nil, "Invalid option [-q]"},
		{lat, []string{"-é"}, nil, "Invalid option [-é]"},
		{lat, []string{"--nope=3"}, nil, "Invalid option [--nope]"},
		// Words that are no option: empty, "--" after "--".
		{lat, []string{"", "H"}, nil, "Invalid buffer placement (want H, D, MH or MD) []"},
		{lat, []string{"--", "--"}, nil, "Expected buffer placement SRC DST (H, D, MH or MD) [--]"},
		{lat, []string{"-m", "8", "--", "H", "D"}, func(o Options) bool { return o.MaxSize == 8 && o.Dst == Device }, ""},
	}
	for _, tc := range cases {
		o, err := Parse(tc.b, tc.args)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%s %q: error %v, want %q", tc.b.name, tc.args, err, tc.err)
		case tc.err != "":
			var ue *UsageError
			if !errors.As(err, &ue) {
				t.Errorf("%s %q: %T, want a UsageError", tc.b.name, tc.args, err)
			}
		case err != nil:
			t.Errorf("%s %q: %v", tc.b.name, tc.args, err)
		case !tc.check(o):
			t.Errorf("%s %q: unexpected options %+v", tc.b.name, tc.args, o)
		}
	}
}
