// Package logx is gompix's debug log: GOMPIX_DEBUG picks a level (WARN,
// INFO, TRACE) and GOMPIX_DEBUG_SUBSYS the subsystems that log, as
// NCCL_DEBUG and NCCL_DEBUG_SUBSYS do. GOMPIX_DEBUG may instead name
// subsystems ("path", "path,boot"): those log at INFO. An unknown word is
// an error (Init fails with it) rather than a silent no-op.
//
// Callers guard formatting with On, a load and a mask test, so a disabled
// line costs no formatting or allocation:
//
//	if logx.On(logx.Coll, logx.Info) {
//		logx.Printf(logx.Coll, logx.Info, "allreduce %d B: %s", n, alg)
//	}
//
// Layer: a leaf (internal/config only).
package logx
