package pmix

import (
	"errors"
	"fmt"
)

// ErrNoLibrary is wrapped by Init's error when no libpmix could be loaded
// (or it lacks an entry point this package calls).
var ErrNoLibrary = errors.New("pmix: no PMIx client library (libpmix) could be loaded")

// ErrNotFound is wrapped when PMIx has no value for a key.
var ErrNotFound = errors.New("pmix: key not found")

// Wildcard is the rank that asks for a job-level value (PMIX_RANK_WILDCARD).
const Wildcard = -2

// EnvLib names the libpmix to load instead of the standard names.
const EnvLib = "GOMPIX_PMIX_LIB"

// Keys of the job-level and per-process values Join reads (the PMIx
// standard's attribute names).
const (
	KeyJobSize   = "pmix.job.size"   // uint32: ranks in the job (wildcard rank)
	KeyLocalRank = "pmix.lrank"      // uint16: the rank's index on its node
	KeyLocalSize = "pmix.local.size" // uint32: ranks of the job on the node
	KeyNodeID    = "pmix.nodeid"     // uint32: the node's identifier
)

// libNames are the names tried after GOMPIX_PMIX_LIB: the runtime library
// (Debian's libpmix2 puts it on the loader's path), then the development
// link name.
var libNames = []string{"libpmix.so.2", "libpmix.so"}

// Error is a PMIx call that returned a status other than PMIX_SUCCESS.
type Error struct {
	Op     string // the PMIx function
	Status int    // the pmix_status_t
	Text   string // PMIx_Error_string's words
}

func (e *Error) Error() string {
	return fmt.Sprintf("pmix: %s: %s (status %d)", e.Op, e.Text, e.Status)
}

// statusNotFound is PMIX_ERR_NOT_FOUND.
const statusNotFound = -46

// Is makes errors.Is(err, ErrNotFound) true for PMIX_ERR_NOT_FOUND.
func (e *Error) Is(target error) bool { return target == ErrNotFound && e.Status == statusNotFound }

// libCandidates is the load order: the library GOMPIX_PMIX_LIB names
// alone when it is set (the user chose it), else libNames.
func libCandidates(getenv func(string) string) []string {
	if p := getenv(EnvLib); p != "" {
		return []string{p}
	}
	return libNames
}
