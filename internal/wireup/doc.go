// Package wireup is the job's rendezvous: the environment contract between the
// launcher and its ranks, and a small PMI-like key-value store served over TCP
// by the launcher (put / fence / get), authenticated with a per-job secret.
//
// Ranks use it once at start-up to publish their transport (UCX worker)
// addresses and to learn their peers'; it is not on any data path, so it
// favours simplicity and clear failure over throughput.
//
// Layer: internal, below launcher and mpi. It imports the standard library
// only and never uses cgo, so the launcher stays a pure-Go binary and the
// store is testable with goroutine "ranks" under -race.
//
// Protocol: every message is a frame — a 4-byte big-endian length, then an
// opcode byte, a 4-byte request id and an opcode-specific body. The first
// frame on a connection must be a hello carrying the rank and the job secret;
// the server compares the secret in constant time and drops the connection on
// a mismatch. Keys are bounded by MaxKeyLen and values by MaxValueLen, so a
// confused or hostile peer cannot make either side allocate without bound.
// Requests are tagged with ids, so one connection carries several requests in
// flight (a Get may proceed while another goroutine waits in a Fence).
//
// Semantics: a Put becomes visible to every rank's Get once the putting rank
// has entered a Fence and that Fence has completed (every rank of the job has
// called it). Fences may be repeated; each is an epoch. If any rank's
// connection drops, pending and later Fences fail with ErrFenceFailed instead
// of waiting for a rank that will never arrive; Gets of already fenced data
// keep working. A rank that has finalized says so (Client.Finalize); the
// launcher asks the Server (Server.Rank) when a rank exits, so that a rank
// that leaves with status 0 but without Finalize ends the job instead of
// hanging its peers.
//
// Robustness: anyone on the host can connect to the store's port. The server
// retries Accept after errors such as EMFILE, gives an unauthenticated
// connection a short deadline, and holds only a bounded number of them
// (closing the oldest), so strangers holding connections open cannot lock
// the ranks out; Dial tries again when its connection is closed before the
// hello is answered.
//
// Concurrency: a Server is safe for concurrent use and serves each connection
// on its own goroutine. A Client is safe for concurrent use by several
// goroutines; Fences on one Client are serialised (they are collective, so
// concurrent Fences from one rank are taken as successive epochs). JobEnv is a
// plain value.
package wireup
