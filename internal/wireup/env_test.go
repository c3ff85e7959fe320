package wireup

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func environMap(list []string) map[string]string {
	m := make(map[string]string)
	for _, kv := range list {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func TestFromEnvironSingleton(t *testing.T) {
	env, under, err := FromEnviron(mapEnv(nil))
	if err != nil || under {
		t.Fatalf("FromEnviron(empty) = %v, %v; want singleton", under, err)
	}
	if env != Singleton() {
		t.Fatalf("env = %+v, want %+v", env, Singleton())
	}
}

func TestEnvironRoundTrip(t *testing.T) {
	for _, want := range []JobEnv{
		{Rank: 3, Size: 8, LocalRank: 1, LocalSize: 4, Node: 1, Addr: "10.0.0.1:4000", Secret: "abc", GPU: 1, JobID: "0a1b"},
		{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, Node: 0, Addr: "127.0.0.1:1", Secret: "s", GPU: NoGPU, JobID: "Z"},
	} {
		m := environMap(want.Environ())
		got, under, err := FromEnviron(mapEnv(m))
		if err != nil || !under {
			t.Fatalf("FromEnviron(%v) = %v, %v", m, under, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip = %+v, want %+v", got, want)
		}
		if m[EnvHydraLocalRank] != m[EnvLocalRank] || m[EnvHydraLocalSize] != m[EnvLocalSize] {
			t.Errorf("Hydra variables %v do not match", m)
		}
	}
}

func TestFromEnvironErrors(t *testing.T) {
	good := environMap(JobEnv{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Addr: "h:1", Secret: "s", GPU: 0, JobID: "j1"}.Environ())
	tests := []struct {
		name  string
		edit  map[string]string
		inErr string
	}{
		{"rank not a number", map[string]string{EnvRank: "x"}, EnvRank},
		{"size missing", map[string]string{EnvSize: ""}, EnvSize},
		{"rank out of range", map[string]string{EnvRank: "2"}, "out of range"},
		{"negative local rank", map[string]string{EnvLocalRank: "-1"}, EnvLocalRank},
		{"local size above size", map[string]string{EnvLocalSize: "3"}, EnvLocalSize},
		{"no address", map[string]string{EnvWireupAddr: ""}, EnvWireupAddr},
		{"no secret", map[string]string{EnvJobSecret: ""}, EnvJobSecret},
		{"bad gpu", map[string]string{EnvGPU: "-2"}, EnvGPU},
		{"gpu garbage", map[string]string{EnvGPU: "0x"}, EnvGPU},
		{"job id with a glob", map[string]string{EnvJobID: "ab*"}, EnvJobID},
		{"job id with a slash", map[string]string{EnvJobID: "../x"}, EnvJobID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := make(map[string]string)
			for k, v := range good {
				m[k] = v
			}
			for k, v := range tt.edit {
				m[k] = v
			}
			_, under, err := FromEnviron(mapEnv(m))
			if !under {
				t.Errorf("underLauncher = false")
			}
			if err == nil || !strings.Contains(err.Error(), tt.inErr) {
				t.Errorf("err = %v, want mention of %q", err, tt.inErr)
			}
		})
	}
	// No job id is allowed (segments then carry no job's name).
	delete(good, EnvJobID)
	if env, _, err := FromEnviron(mapEnv(good)); err != nil || env.JobID != "" {
		t.Errorf("absent job id: %+v, %v", env, err)
	}
	// GPU absent means none.
	delete(good, EnvGPU)
	env, _, err := FromEnviron(mapEnv(good))
	if err != nil || env.GPU != NoGPU {
		t.Errorf("absent GPU: env.GPU = %d, err = %v", env.GPU, err)
	}
}

// Under another MPI's launcher (no GOMPIX_RANK, but its variables for a job
// of several ranks) the process is not taken for a singleton: each rank
// would believe it was alone.
func TestFromEnvironForeignLauncher(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		refused string // substring of the error; "" for a singleton
	}{
		{"Open MPI", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1", "PMIX_RANK": "1"}, "Open MPI's mpirun"},
		{"Open MPI one rank", map[string]string{"OMPI_COMM_WORLD_SIZE": "1", "PMIX_RANK": "0"}, ""},
		{"PMIx", map[string]string{"PMIX_RANK": "0"}, "PMIx"},
		{"srun", map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "4"}, "srun"},
		{"srun one task", map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "1"}, ""},
		{"sbatch script, no step", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, ""},
		{"Hydra", map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2"}, "PMI-2"},
		{"Hydra one rank", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "1"}, ""},
		// The launchers internal/bootstrap joins are not refused here.
		{"Hydra with PMI-2", map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2", "PMI_FD": "6"}, ""},
		{"srun --mpi=pmi2", map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "4", "PMI_FD": "5"}, ""},
		{"Open MPI with PMIx", map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "PMIX_RANK": "1", "PMIX_NAMESPACE": "7"}, ""},
		{"srun --mpi=pmix", map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "4", "PMIX_RANK": "0", "PMIX_NAMESPACE": "slurm.pmix.1.0"}, ""},
		{"nothing", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, under, err := FromEnviron(mapEnv(tc.env))
			if under {
				t.Errorf("underLauncher = true")
			}
			if tc.refused == "" {
				if err != nil || env != Singleton() {
					t.Fatalf("FromEnviron = %+v, %v; want a singleton", env, err)
				}
				return
			}
			if !errors.Is(err, ErrForeignLauncher) || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "gompirun") {
				t.Fatalf("err = %v; want ErrForeignLauncher naming %q and saying to use gompirun", err, tc.refused)
			}
		})
	}
	// gompirun's own variables win: a gompix job started inside an srun
	// allocation or under a batch system's environment is fine.
	m := environMap(JobEnv{Rank: 0, Size: 2, LocalRank: 0, LocalSize: 2, Addr: "h:1", Secret: "s", GPU: NoGPU, JobID: "j"}.Environ())
	m["SLURM_PROCID"], m["SLURM_STEP_ID"], m["SLURM_NTASKS"] = "0", "0", "8"
	if _, under, err := FromEnviron(mapEnv(m)); err != nil || !under {
		t.Fatalf("gompirun's rank inside srun: %v, %v", under, err)
	}
}

func TestShmPrefix(t *testing.T) {
	a, b := ShmPrefix("ab"), ShmPrefix("abc")
	if a != "gompix-ab-" || strings.HasPrefix(b, a) || strings.HasPrefix(a, b) {
		t.Fatalf("ShmPrefix: %q and %q; want neither a prefix of the other", a, b)
	}
}
