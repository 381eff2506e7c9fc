/*
 * native-timer: the native baseline of the CUDA benchmark. Times one kernel of
 * a compiled module (cubin, fatbin or PTX) with CUDA events, the way the
 * farm's CUDA board does (TVM time_evaluator): one discarded warm-up launch,
 * then REPEAT times { event record, NUMBER back-to-back launches, event
 * record, event synchronize, elapsed / NUMBER }, all on stream 0.
 *
 * Build (no CUDA headers or libraries needed; libcuda.so.1 is opened at run
 * time):  cc -O2 -o native-timer native-timer.c -ldl
 *
 * Usage:  native-timer MODULE_FILE KERNEL --grid X,Y,Z --block X,Y,Z
 *             [--smem BYTES] [--number N] [--repeat R] [--device I] ARG...
 *   ARG:  buf:NBYTES[:FILL_F32]  device buffer of NBYTES (a multiple of 4),
 *                                every float set to FILL_F32 (default 1.0)
 *         i32:V                  int scalar
 *         f32:V                  float scalar
 *   Defaults: --smem 0 --number 10 --repeat 1 --device 0.
 *
 * Output: one line of JSON on stdout,
 *   {"device":"NVIDIA H100 ...","kernel":"...","number":N,"results_ms":[...]}
 * with the per-launch milliseconds of each repeat. On any failure: a message
 * on stderr (naming the CUDA error), nothing on stdout, exit code 1.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the slice of the CUDA driver API used here (cuda.h, 64-bit) -------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
#define CUDA_SUCCESS 0
#define CU_EVENT_DEFAULT 0u

typedef CUresult (*cuInit_t)(unsigned int flags);
typedef CUresult (*cuDeviceGet_t)(CUdevice *device, int ordinal);
typedef CUresult (*cuDeviceGetName_t)(char *name, int len, CUdevice dev);
typedef CUresult (*cuDevicePrimaryCtxRetain_t)(CUcontext *pctx, CUdevice dev);
typedef CUresult (*cuCtxSetCurrent_t)(CUcontext ctx);
typedef CUresult (*cuModuleLoadData_t)(CUmodule *module, const void *image);
typedef CUresult (*cuModuleGetFunction_t)(CUfunction *hfunc, CUmodule hmod, const char *name);
typedef CUresult (*cuMemAlloc_t)(CUdeviceptr *dptr, size_t bytesize);
typedef CUresult (*cuMemFree_t)(CUdeviceptr dptr);
typedef CUresult (*cuMemsetD32_t)(CUdeviceptr dst, unsigned int ui, size_t n);
typedef CUresult (*cuLaunchKernel_t)(CUfunction f, unsigned int gridX, unsigned int gridY, unsigned int gridZ,
                                     unsigned int blockX, unsigned int blockY, unsigned int blockZ,
                                     unsigned int sharedMemBytes, CUstream stream, void **kernelParams, void **extra);
typedef CUresult (*cuMemcpyDtoDAsync_t)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
typedef CUresult (*cuCtxSynchronize_t)(void);
typedef CUresult (*cuEventCreate_t)(CUevent *event, unsigned int flags);
typedef CUresult (*cuEventRecord_t)(CUevent event, CUstream stream);
typedef CUresult (*cuEventSynchronize_t)(CUevent event);
typedef CUresult (*cuEventElapsedTime_t)(float *ms, CUevent start, CUevent end);
typedef CUresult (*cuGetErrorName_t)(CUresult error, const char **str);

static struct {
  cuInit_t init;
  cuDeviceGet_t deviceGet;
  cuDeviceGetName_t deviceGetName;
  cuDevicePrimaryCtxRetain_t primaryCtxRetain;
  cuCtxSetCurrent_t ctxSetCurrent;
  cuModuleLoadData_t moduleLoadData;
  cuModuleGetFunction_t moduleGetFunction;
  cuMemAlloc_t memAlloc;
  cuMemFree_t memFree;
  cuMemsetD32_t memsetD32;
  cuLaunchKernel_t launchKernel;
  cuMemcpyDtoDAsync_t memcpyDtoDAsync;
  cuCtxSynchronize_t ctxSynchronize;
  cuEventCreate_t eventCreate;
  cuEventRecord_t eventRecord;
  cuEventSynchronize_t eventSynchronize;
  cuEventElapsedTime_t eventElapsedTime;
  cuGetErrorName_t getErrorName;
} cu;

/* --- failure ------------------------------------------------------------- */

static void die(const char *fmt, ...) {
  va_list ap;
  fputs("native-timer: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void check(CUresult r, const char *call) {
  const char *name = NULL;
  if (r == CUDA_SUCCESS) return;
  if (cu.getErrorName == NULL || cu.getErrorName(r, &name) != CUDA_SUCCESS || name == NULL) name = "unknown CUDA error";
  die("%s failed: %s (%d)", call, name, r);
}

#define CHECK(call) check((call), #call)

static void *symbol(void *lib, const char *name, const char *fallback) {
  void *p = dlsym(lib, name);
  if (p == NULL && fallback != NULL) p = dlsym(lib, fallback);
  if (p == NULL) die("libcuda.so.1 has no symbol %s", name);
  return p;
}

static void load_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char *why = dlerror();
    die("cannot load libcuda.so.1 (the NVIDIA driver library): %s", why != NULL ? why : "unknown error");
  }
  cu.getErrorName = (cuGetErrorName_t)symbol(lib, "cuGetErrorName", NULL);
  cu.init = (cuInit_t)symbol(lib, "cuInit", NULL);
  cu.deviceGet = (cuDeviceGet_t)symbol(lib, "cuDeviceGet", NULL);
  cu.deviceGetName = (cuDeviceGetName_t)symbol(lib, "cuDeviceGetName", NULL);
  cu.primaryCtxRetain = (cuDevicePrimaryCtxRetain_t)symbol(lib, "cuDevicePrimaryCtxRetain", NULL);
  cu.ctxSetCurrent = (cuCtxSetCurrent_t)symbol(lib, "cuCtxSetCurrent", NULL);
  cu.moduleLoadData = (cuModuleLoadData_t)symbol(lib, "cuModuleLoadData", NULL);
  cu.moduleGetFunction = (cuModuleGetFunction_t)symbol(lib, "cuModuleGetFunction", NULL);
  cu.memAlloc = (cuMemAlloc_t)symbol(lib, "cuMemAlloc_v2", NULL);
  cu.memFree = (cuMemFree_t)symbol(lib, "cuMemFree_v2", NULL);
  cu.memsetD32 = (cuMemsetD32_t)symbol(lib, "cuMemsetD32_v2", NULL);
  cu.launchKernel = (cuLaunchKernel_t)symbol(lib, "cuLaunchKernel", NULL);
  cu.memcpyDtoDAsync = (cuMemcpyDtoDAsync_t)symbol(lib, "cuMemcpyDtoDAsync_v2", NULL);
  cu.ctxSynchronize = (cuCtxSynchronize_t)symbol(lib, "cuCtxSynchronize", NULL);
  cu.eventCreate = (cuEventCreate_t)symbol(lib, "cuEventCreate", NULL);
  cu.eventRecord = (cuEventRecord_t)symbol(lib, "cuEventRecord", NULL);
  cu.eventSynchronize = (cuEventSynchronize_t)symbol(lib, "cuEventSynchronize", NULL);
  /* CUDA 13's cuda.h maps cuEventElapsedTime to _v2; drivers export both. */
  cu.eventElapsedTime = (cuEventElapsedTime_t)symbol(lib, "cuEventElapsedTime", "cuEventElapsedTime_v2");
}

/* --- command line ------------------------------------------------------- */

#define MEMCPY_DTOD "@memcpy_dtod"

enum arg_kind { ARG_BUF, ARG_I32, ARG_F32 };

struct kernel_arg {
  enum arg_kind kind;
  size_t bytes;      /* ARG_BUF */
  uint32_t fill;     /* ARG_BUF: bit pattern of the fill float */
  CUdeviceptr ptr;   /* ARG_BUF, once allocated */
  int32_t i32;
  float f32;
};

static long long parse_int(const char *s, long long min, long long max, const char *what) {
  char *end = NULL;
  long long v;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max) die("%s: %s is not an integer in [%lld, %lld]", what, s, min, max);
  return v;
}

static float parse_f32(const char *s, const char *what) {
  char *end = NULL;
  float v;
  errno = 0;
  v = strtof(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE) die("%s: %s is not a float32", what, s);
  return v;
}

static void parse_dim3(const char *s, unsigned int out[3], const char *what) {
  char buf[96];
  char *parts[3];
  char *save = NULL;
  int i;
  if (strlen(s) >= sizeof buf) die("%s: %s is not X,Y,Z", what, s);
  strcpy(buf, s);
  for (i = 0; i < 3; i++) {
    parts[i] = strtok_r(i == 0 ? buf : NULL, ",", &save);
    if (parts[i] == NULL) die("%s: %s is not X,Y,Z", what, s);
  }
  if (strtok_r(NULL, ",", &save) != NULL) die("%s: %s is not X,Y,Z", what, s);
  for (i = 0; i < 3; i++) out[i] = (unsigned int)parse_int(parts[i], 1, UINT_MAX, what);
}

static void parse_kernel_arg(const char *s, struct kernel_arg *a) {
  char buf[128];
  char *colon;
  float fill = 1.0f;
  memset(a, 0, sizeof *a);
  if (strncmp(s, "i32:", 4) == 0) {
    a->kind = ARG_I32;
    a->i32 = (int32_t)parse_int(s + 4, INT32_MIN, INT32_MAX, "i32 argument");
    return;
  }
  if (strncmp(s, "f32:", 4) == 0) {
    a->kind = ARG_F32;
    a->f32 = parse_f32(s + 4, "f32 argument");
    return;
  }
  if (strncmp(s, "buf:", 4) != 0) die("argument %s is not buf:NBYTES[:FILL_F32], i32:V or f32:V", s);
  if (strlen(s + 4) >= sizeof buf) die("argument %s is too long", s);
  strcpy(buf, s + 4);
  colon = strchr(buf, ':');
  if (colon != NULL) {
    *colon = '\0';
    fill = parse_f32(colon + 1, "buffer fill");
  }
  a->kind = ARG_BUF;
  a->bytes = (size_t)parse_int(buf, 4, LLONG_MAX, "buffer size");
  if (a->bytes % 4 != 0) die("buffer size %zu is not a multiple of 4", a->bytes);
  memcpy(&a->fill, &fill, sizeof a->fill);
}

static void *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  char *data;
  long size;
  if (f == NULL) die("cannot open module %s: %s", path, strerror(errno));
  if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) die("cannot read module %s: %s", path, strerror(errno));
  if (size == 0) die("module %s is empty", path);
  data = malloc((size_t)size + 1); /* + NUL, so PTX text loads too */
  if (data == NULL) die("out of memory reading %s", path);
  if (fread(data, 1, (size_t)size, f) != (size_t)size) die("cannot read module %s", path);
  data[size] = '\0';
  fclose(f);
  return data;
}

static void print_json_string(const char *s) {
  putchar('"');
  for (; *s != '\0'; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

static void usage(void) {
  die("usage: native-timer MODULE_FILE KERNEL --grid X,Y,Z --block X,Y,Z [--smem BYTES] [--number N] [--repeat R] [--device I] ARG...\n"
      "  ARG: buf:NBYTES[:FILL_F32] | i32:V | f32:V");
}

int main(int argc, char **argv) {
  const char *module_path = NULL, *kernel_name = NULL;
  unsigned int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  unsigned int smem = 0;
  int number = 10, repeat = 1, ordinal = 0;
  int have_grid = 0, have_block = 0;
  struct kernel_arg *args;
  void **params;
  int nargs = 0, i, r;
  void *image;
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUevent start, stop;
  char name[256];
  double *results;

  if (argc < 3) usage();
  module_path = argv[1];
  kernel_name = argv[2];
  args = calloc((size_t)argc, sizeof *args);
  params = calloc((size_t)argc, sizeof *params);
  results = NULL;
  if (args == NULL || params == NULL) die("out of memory");

  for (i = 3; i < argc; i++) {
    const char *opt = argv[i];
    if (strncmp(opt, "--", 2) == 0) {
      if (i + 1 >= argc) die("%s needs a value", opt);
      const char *val = argv[++i];
      if (strcmp(opt, "--grid") == 0) {
        parse_dim3(val, grid, "--grid");
        have_grid = 1;
      } else if (strcmp(opt, "--block") == 0) {
        parse_dim3(val, block, "--block");
        have_block = 1;
      } else if (strcmp(opt, "--smem") == 0) smem = (unsigned int)parse_int(val, 0, UINT_MAX, "--smem");
      else if (strcmp(opt, "--number") == 0) number = (int)parse_int(val, 1, INT_MAX, "--number");
      else if (strcmp(opt, "--repeat") == 0) repeat = (int)parse_int(val, 1, INT_MAX, "--repeat");
      else if (strcmp(opt, "--device") == 0) ordinal = (int)parse_int(val, 0, INT_MAX, "--device");
      else die("unknown option %s", opt);
    } else {
      parse_kernel_arg(opt, &args[nargs++]);
    }
  }
  if (!have_grid || !have_block) usage();
  results = calloc((size_t)repeat, sizeof *results);
  if (results == NULL) die("out of memory");
  image = read_file(module_path);

  load_driver();
  CHECK(cu.init(0));
  CHECK(cu.deviceGet(&dev, ordinal));
  CHECK(cu.deviceGetName(name, (int)sizeof name, dev));
  name[sizeof name - 1] = '\0';
  CHECK(cu.primaryCtxRetain(&ctx, dev));
  CHECK(cu.ctxSetCurrent(ctx));
  CHECK(cu.moduleLoadData(&mod, image));
  /* The pseudo-kernel "@memcpy_dtod" times cuMemcpyDtoD of its first buffer into its second: the copy ceiling. */
  if (strcmp(kernel_name, MEMCPY_DTOD) == 0) {
    if (nargs != 2 || args[0].kind != ARG_BUF || args[1].kind != ARG_BUF || args[1].bytes < args[0].bytes)
      die("%s takes two buffers, the second at least as large as the first", MEMCPY_DTOD);
    fn = NULL;
  } else {
    CUresult fr = cu.moduleGetFunction(&fn, mod, kernel_name);
    if (fr != CUDA_SUCCESS) {
      const char *en = NULL;
      if (cu.getErrorName(fr, &en) != CUDA_SUCCESS || en == NULL) en = "unknown CUDA error";
      die("cuModuleGetFunction(\"%s\") failed: %s (%d)", kernel_name, en, fr);
    }
  }

  for (i = 0; i < nargs; i++) {
    struct kernel_arg *a = &args[i];
    switch (a->kind) {
      case ARG_BUF:
        CHECK(cu.memAlloc(&a->ptr, a->bytes));
        CHECK(cu.memsetD32(a->ptr, a->fill, a->bytes / 4));
        params[i] = &a->ptr;
        break;
      case ARG_I32:
        params[i] = &a->i32;
        break;
      case ARG_F32:
        params[i] = &a->f32;
        break;
    }
  }
  CHECK(cu.ctxSynchronize());
  CHECK(cu.eventCreate(&start, CU_EVENT_DEFAULT));
  CHECK(cu.eventCreate(&stop, CU_EVENT_DEFAULT));

#define LAUNCH()                                                                                                        \
  CHECK(fn == NULL ? cu.memcpyDtoDAsync(args[1].ptr, args[0].ptr, args[0].bytes, NULL)                                  \
                   : cu.launchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem, NULL, params, NULL))
  LAUNCH(); /* warm-up, discarded */
  CHECK(cu.ctxSynchronize());
  for (r = 0; r < repeat; r++) {
    float ms = 0.0f;
    CHECK(cu.eventRecord(start, NULL));
    for (i = 0; i < number; i++) LAUNCH();
    CHECK(cu.eventRecord(stop, NULL));
    CHECK(cu.eventSynchronize(stop));
    CHECK(cu.eventElapsedTime(&ms, start, stop));
    results[r] = (double)ms / number;
  }
  CHECK(cu.ctxSynchronize()); /* surfaces any asynchronous launch failure */

  for (i = 0; i < nargs; i++)
    if (args[i].kind == ARG_BUF) CHECK(cu.memFree(args[i].ptr));

  fputs("{\"device\":", stdout);
  print_json_string(name);
  fputs(",\"kernel\":", stdout);
  print_json_string(kernel_name);
  printf(",\"number\":%d,\"results_ms\":[", number);
  for (r = 0; r < repeat; r++) printf("%s%.9g", r == 0 ? "" : ",", results[r]);
  fputs("]}\n", stdout);
  if (fflush(stdout) != 0) die("cannot write the result: %s", strerror(errno));
  return 0;
}
