#include <stdint.h>

const char *gxn_load(const char *path);
uint64_t gxn_start(const char *name);
void gxn_end(uint64_t id);
void gxn_mark(const char *name);
