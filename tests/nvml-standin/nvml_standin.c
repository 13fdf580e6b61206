/*
 * A stand-in for libnvidia-ml.so: exports the NVML functions nightjar calls
 * through nvml-wrapper, with the same ABI, and answers from a values file so
 * tests drive the real NVML code path on machines with no GPU.
 *
 * The file named by $NVML_STANDIN_FILE (without it: `nvml-standin-values`
 * beside this library, for a process whose environment the test does not
 * set, such as a SLURM job's) holds `key=value` lines, re-read whenever it
 * changes; a key given again takes the later value:
 *   count=2
 *   0.name=NVIDIA A100-SXM4-80GB      0.uuid=GPU-...
 *   0.mem_total=85899345920           0.mem_used=1073741824   (bytes)
 *   0.util=37  0.util_mem=12  0.temp=61  0.power_mw=250000
 *   0.energy_mj=123456                (absent: not supported)
 *   0.procs=4242:1073741824,4343:2048 (pid:bytes,...)
 *   0.fail=1                          (every call on GPU 0 fails: GPU is lost)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_UNKNOWN = 999,
};

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } nvmlProcessInfo_t;

#define MAX_GPUS 16
#define MAX_PROCS 32

struct gpu {
    char name[96], uuid[96];
    unsigned long long mem_total, mem_used, energy_mj;
    unsigned int util, util_mem, temp, power_mw;
    int has_energy, fail, nprocs;
    nvmlProcessInfo_t procs[MAX_PROCS];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpu gpus[MAX_GPUS];
static unsigned int gpu_count;
static struct timespec seen_mtime;
static off_t seen_size = -1;
static int initialised;

static void parse_procs(struct gpu *g, const char *v) {
    g->nprocs = 0;
    while (*v && g->nprocs < MAX_PROCS) {
        unsigned int pid = 0;
        unsigned long long mem = 0;
        if (sscanf(v, "%u:%llu", &pid, &mem) != 2) break;
        g->procs[g->nprocs].pid = pid;
        g->procs[g->nprocs].usedGpuMemory = mem;
        g->nprocs++;
        const char *comma = strchr(v, ',');
        if (!comma) break;
        v = comma + 1;
    }
}

/* The values file: $NVML_STANDIN_FILE, else the one beside this library. */
static const char *values_path(void) {
    const char *env = getenv("NVML_STANDIN_FILE");
    if (env) return env;
    static char beside[4096];
    Dl_info info;
    if (!beside[0] && dladdr((void *)values_path, &info) && info.dli_fname) {
        snprintf(beside, sizeof beside, "%s", info.dli_fname);
        char *slash = strrchr(beside, '/');
        if (!slash) {
            beside[0] = 0;
            return NULL;
        }
        snprintf(slash + 1, sizeof beside - (size_t)(slash + 1 - beside), "nvml-standin-values");
    }
    return beside[0] ? beside : NULL;
}

/* Re-reads the values file if it changed; called with the lock held. */
static void refresh(void) {
    const char *path = values_path();
    struct stat st;
    if (!path || stat(path, &st) != 0) return;
    if (st.st_size == seen_size && st.st_mtim.tv_sec == seen_mtime.tv_sec &&
        st.st_mtim.tv_nsec == seen_mtime.tv_nsec)
        return;
    FILE *f = fopen(path, "r");
    if (!f) return;
    memset(gpus, 0, sizeof gpus);
    gpu_count = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        const char *key = line, *val = eq + 1;
        if (strcmp(key, "count") == 0) {
            gpu_count = (unsigned)atoi(val);
            if (gpu_count > MAX_GPUS) gpu_count = MAX_GPUS;
            continue;
        }
        char *dot = strchr(key, '.');
        if (!dot) continue;
        int i = atoi(key);
        if (i < 0 || i >= MAX_GPUS) continue;
        struct gpu *g = &gpus[i];
        const char *k = dot + 1;
        if (!strcmp(k, "name")) snprintf(g->name, sizeof g->name, "%s", val);
        else if (!strcmp(k, "uuid")) snprintf(g->uuid, sizeof g->uuid, "%s", val);
        else if (!strcmp(k, "mem_total")) g->mem_total = strtoull(val, 0, 10);
        else if (!strcmp(k, "mem_used")) g->mem_used = strtoull(val, 0, 10);
        else if (!strcmp(k, "util")) g->util = (unsigned)atoi(val);
        else if (!strcmp(k, "util_mem")) g->util_mem = (unsigned)atoi(val);
        else if (!strcmp(k, "temp")) g->temp = (unsigned)atoi(val);
        else if (!strcmp(k, "power_mw")) g->power_mw = (unsigned)atoi(val);
        else if (!strcmp(k, "energy_mj")) { g->energy_mj = strtoull(val, 0, 10); g->has_energy = 1; }
        else if (!strcmp(k, "procs")) parse_procs(g, val);
        else if (!strcmp(k, "fail")) g->fail = atoi(val);
    }
    fclose(f);
    seen_size = st.st_size;
    seen_mtime = st.st_mtim;
}

/* Looks up a device handle (index + 1) and refreshes the values. */
static nvmlReturn_t get(nvmlDevice_t d, struct gpu **out) {
    unsigned long i = (unsigned long)d;
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    pthread_mutex_lock(&lock);
    refresh();
    pthread_mutex_unlock(&lock);
    if (i == 0 || i > gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
    *out = &gpus[i - 1];
    return (*out)->fail ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) { initialised = 1; return NVML_SUCCESS; }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return nvmlInit_v2(); }
nvmlReturn_t nvmlShutdown(void) { initialised = 0; return NVML_SUCCESS; }

const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len) {
    snprintf(v, len, "standin-1.0");
    return NVML_SUCCESS;
}

/* The CUDA version the driver supports, as 1000 * major + 10 * minor. */
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
    *v = 12040;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    return nvmlSystemGetCudaDriverVersion_v2(v);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    pthread_mutex_lock(&lock);
    refresh();
    *count = gpu_count;
    pthread_mutex_unlock(&lock);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    unsigned int n;
    nvmlReturn_t r = nvmlDeviceGetCount_v2(&n);
    if (r) return r;
    if (i >= n) return NVML_ERROR_INVALID_ARGUMENT;
    *d = (nvmlDevice_t)(unsigned long)(i + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len) {
    struct gpu *g; nvmlReturn_t r = get(d, &g); if (r) return r;
    snprintf(name, len, "%s", g->name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len) {
    struct gpu *g; nvmlReturn_t r = get(d, &g); if (r) return r;
    snprintf(uuid, len, "%s", g->uuid);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
    struct gpu *g; nvmlReturn_t r = get(d, &g); if (r) return r;
    m->total = g->mem_total; m->used = g->mem_used; m->free = g->mem_total - g->mem_used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
    struct gpu *g; nvmlReturn_t r = get(d, &g); if (r) return r;
    m->total = g->mem_total; m->reserved = 0; m->used = g->mem_used;
    m->free = g->mem_total - g->mem_used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    struct gpu *g; nvmlReturn_t r = get(d, &g); if (r) return r;
    u->gpu = g->util; u->memory = g->util_mem;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t) {
    struct gpu *g; nvmlReturn_t r = get(d, &g); if (r) return r;
    if (sensor != 0) return NVML_ERROR_INVALID_ARGUMENT;
    *t = g->temp;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    struct gpu *g; nvmlReturn_t r = get(d, &g); if (r) return r;
    *mw = g->power_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    struct gpu *g; nvmlReturn_t r = get(d, &g); if (r) return r;
    if (!g->has_energy) return NVML_ERROR_NOT_SUPPORTED;
    *mj = g->energy_mj;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos) {
    struct gpu *g; nvmlReturn_t r = get(d, &g); if (r) return r;
    if (!infos || *count < (unsigned)g->nprocs) {
        *count = (unsigned)g->nprocs;
        return g->nprocs ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    }
    memcpy(infos, g->procs, sizeof(nvmlProcessInfo_t) * (size_t)g->nprocs);
    *count = (unsigned)g->nprocs;
    return NVML_SUCCESS;
}
