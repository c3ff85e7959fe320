//go:build cgo && linux

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "gxpmix.h"

static struct {
	int (*init)(gxp_proc *, gxp_info *, size_t);
	int (*finalize)(const gxp_info *, size_t);
	int (*abort)(int, const char *, gxp_proc *, size_t);
	int (*put)(uint8_t, const char *, gxp_value *);
	int (*commit)(void);
	int (*fence)(const gxp_proc *, size_t, const gxp_info *, size_t);
	int (*get)(const gxp_proc *, const char *, const gxp_info *, size_t, gxp_value **);
	const char *(*strerror)(int);
	void (*destruct)(gxp_value *);
} fn;

// gxp_load opens path and resolves every entry point; NULL on success, else
// the loader's words (static storage, valid until the next dl call).
const char *gxp_load(const char *path) {
	// RTLD_GLOBAL: libpmix loads its own plugins, which need its symbols.
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		return dlerror();
	}
	struct { void **slot; const char *name; } syms[] = {
		{(void **)&fn.init, "PMIx_Init"},
		{(void **)&fn.finalize, "PMIx_Finalize"},
		{(void **)&fn.abort, "PMIx_Abort"},
		{(void **)&fn.put, "PMIx_Put"},
		{(void **)&fn.commit, "PMIx_Commit"},
		{(void **)&fn.fence, "PMIx_Fence"},
		{(void **)&fn.get, "PMIx_Get"},
		{(void **)&fn.strerror, "PMIx_Error_string"},
		{(void **)&fn.destruct, "PMIx_Value_destruct"},
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (*syms[i].slot == NULL) {
			const char *e = dlerror();
			dlclose(h);
			memset(&fn, 0, sizeof fn);
			return e != NULL ? e : "an entry point is missing";
		}
	}
	return NULL;
}

int gxp_init(gxp_proc *self) {
	memset(self, 0, sizeof *self);
	return fn.init(self, NULL, 0);
}

static void proc_of(gxp_proc *p, const char *nspace, uint32_t rank) {
	memset(p, 0, sizeof *p);
	strncpy(p->nspace, nspace, sizeof p->nspace - 1);
	p->rank = rank;
}

// release frees a value PMIx_Get returned (PMIX_VALUE_RELEASE: destruct,
// then free).
static void release(gxp_value *v) {
	fn.destruct(v);
	free(v);
}

int gxp_get_uint(const char *nspace, uint32_t rank, const char *key, uint64_t *out) {
	gxp_proc p;
	gxp_value *v = NULL;
	proc_of(&p, nspace, rank);
	int rc = fn.get(&p, key, NULL, 0, &v);
	if (rc != 0 || v == NULL) {
		return rc != 0 ? rc : GXP_WRONG_TYPE;
	}
	switch (v->type) {
	case GXP_BOOL: *out = v->data.flag; break;
	case GXP_UINT8: *out = v->data.u8; break;
	case GXP_UINT16: *out = v->data.u16; break;
	case GXP_UINT32: case GXP_PROC_RANK: *out = v->data.u32; break;
	case GXP_UINT64: *out = v->data.u64; break;
	case GXP_UINT: *out = v->data.u; break;
	case GXP_SIZE: *out = v->data.sz; break;
	case GXP_INT8: rc = v->data.i8 < 0 ? GXP_WRONG_TYPE : 0; *out = (uint64_t)v->data.i8; break;
	case GXP_INT16: rc = v->data.i16 < 0 ? GXP_WRONG_TYPE : 0; *out = (uint64_t)v->data.i16; break;
	case GXP_INT32: rc = v->data.i32 < 0 ? GXP_WRONG_TYPE : 0; *out = (uint64_t)v->data.i32; break;
	case GXP_INT64: rc = v->data.i64 < 0 ? GXP_WRONG_TYPE : 0; *out = (uint64_t)v->data.i64; break;
	case GXP_INT: rc = v->data.i < 0 ? GXP_WRONG_TYPE : 0; *out = (uint64_t)v->data.i; break;
	default: rc = GXP_WRONG_TYPE;
	}
	release(v);
	return rc;
}

// gxp_get_bytes copies a byte-object (or string) value into malloc'd
// memory the caller frees.
int gxp_get_bytes(const char *nspace, uint32_t rank, const char *key, char **out, size_t *n) {
	gxp_proc p;
	gxp_value *v = NULL;
	proc_of(&p, nspace, rank);
	int rc = fn.get(&p, key, NULL, 0, &v);
	if (rc != 0 || v == NULL) {
		return rc != 0 ? rc : GXP_WRONG_TYPE;
	}
	const char *src = NULL;
	size_t len = 0;
	if (v->type == GXP_BYTE_OBJECT) {
		src = v->data.bo.bytes;
		len = v->data.bo.size;
	} else if (v->type == GXP_STRING && v->data.str != NULL) {
		src = v->data.str;
		len = strlen(src);
	} else {
		release(v);
		return GXP_WRONG_TYPE;
	}
	*out = malloc(len + 1);
	if (*out == NULL) {
		release(v);
		return -1; // PMIX_ERROR
	}
	if (len > 0) {
		memcpy(*out, src, len);
	}
	*n = len;
	release(v);
	return 0;
}

int gxp_put_bytes(const char *key, const char *b, size_t n) {
	gxp_value v;
	memset(&v, 0, sizeof v);
	v.type = GXP_BYTE_OBJECT;
	v.data.bo.bytes = (char *)b; // PMIx_Put copies the value
	v.data.bo.size = n;
	return fn.put(GXP_SCOPE_GLOBAL, key, &v);
}

int gxp_commit(void) { return fn.commit(); }

// gxp_fence_all fences every process of nspace, collecting the data each
// put (PMIX_COLLECT_DATA) when collect is set.
int gxp_fence_all(const char *nspace, int collect) {
	gxp_proc p;
	gxp_info info;
	proc_of(&p, nspace, GXP_RANK_WILDCARD);
	memset(&info, 0, sizeof info);
	strcpy(info.key, "pmix.collect");
	info.value.type = GXP_BOOL;
	info.value.data.flag = collect != 0;
	return fn.fence(&p, 1, &info, 1);
}

int gxp_finalize(void) { return fn.finalize(NULL, 0); }

// gxp_abort asks for the end of every process of the caller's namespace
// (no procs: PMIx's meaning of "all of mine").
int gxp_abort(int code, const char *msg) { return fn.abort(code, msg, NULL, 0); }

const char *gxp_strerror(int status) {
	if (status == GXP_WRONG_TYPE) {
		return "the value has a type gompix cannot read";
	}
	return fn.strerror != NULL ? fn.strerror(status) : "unknown status";
}
