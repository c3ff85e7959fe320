// The few PMIx types gompix passes, declared here with the layout the PMIx
// standard fixes (pmix_common.h), and the calls made through a table of
// function pointers filled by dlsym.
#ifndef GX_PMIX_H
#define GX_PMIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
	char nspace[256]; // PMIX_MAX_NSLEN + 1
	uint32_t rank;
} gxp_proc;

typedef struct {
	char *bytes;
	size_t size;
} gxp_bo;

typedef struct {
	uint16_t type; // pmix_data_type_t
	union {
		bool flag;
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		int8_t i8;
		int16_t i16;
		int32_t i32;
		int64_t i64;
		int i;
		unsigned u;
		size_t sz;
		char *str;
		gxp_bo bo;
		char pad[24]; // the union's size: its largest member is three words
	} data;
} gxp_value;

typedef struct {
	char key[512]; // PMIX_MAX_KEYLEN + 1
	uint32_t flags;
	gxp_value value;
} gxp_info;

_Static_assert(sizeof(gxp_proc) == 260, "pmix_proc_t is 260 bytes");
_Static_assert(sizeof(gxp_value) == 32 && offsetof(gxp_value, data) == 8, "pmix_value_t layout");
_Static_assert(sizeof(gxp_info) == 552 && offsetof(gxp_info, value) == 520, "pmix_info_t layout");

enum {
	GXP_BOOL = 1, GXP_STRING = 3, GXP_SIZE = 4, GXP_INT = 6, GXP_INT8 = 7, GXP_INT16 = 8,
	GXP_INT32 = 9, GXP_INT64 = 10, GXP_UINT = 11, GXP_UINT8 = 12, GXP_UINT16 = 13,
	GXP_UINT32 = 14, GXP_UINT64 = 15, GXP_BYTE_OBJECT = 27, GXP_PROC_RANK = 40,
};

#define GXP_SCOPE_GLOBAL 3
#define GXP_RANK_WILDCARD (UINT32_MAX - 1)
// GXP_WRONG_TYPE: a value of a type the caller cannot read (not a PMIx status).
#define GXP_WRONG_TYPE (-100000)

const char *gxp_load(const char *path);
int gxp_init(gxp_proc *self);
int gxp_get_uint(const char *nspace, uint32_t rank, const char *key, uint64_t *out);
int gxp_get_bytes(const char *nspace, uint32_t rank, const char *key, char **out, size_t *n);
int gxp_put_bytes(const char *key, const char *b, size_t n);
int gxp_commit(void);
int gxp_fence_all(const char *nspace, int collect);
int gxp_finalize(void);
int gxp_abort(int code, const char *msg);
const char *gxp_strerror(int status);

#endif
