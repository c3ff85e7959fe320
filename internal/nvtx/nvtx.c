//go:build cgo && linux

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include "nvtx.h"

// The NVTX v2 C entry points gompix uses: process-wide ranges (start/end
// by id, not push/pop: a goroutine may change threads inside a call).
static uint64_t (*range_start)(const char *);
static void (*range_end)(uint64_t);
static void (*mark)(const char *);

const char *gxn_load(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		return dlerror();
	}
	range_start = (uint64_t (*)(const char *))dlsym(h, "nvtxRangeStartA");
	range_end = (void (*)(uint64_t))dlsym(h, "nvtxRangeEnd");
	mark = (void (*)(const char *))dlsym(h, "nvtxMarkA");
	if (range_start == NULL || range_end == NULL) {
		range_start = NULL;
		range_end = NULL;
		dlclose(h);
		return "nvtxRangeStartA or nvtxRangeEnd missing";
	}
	return NULL;
}

uint64_t gxn_start(const char *name) { return range_start(name); }

void gxn_end(uint64_t id) { range_end(id); }

void gxn_mark(const char *name) {
	if (mark != NULL) {
		mark(name);
	}
}
