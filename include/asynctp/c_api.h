/* asynctp's C ABI: the library from C and from any language with a C foreign
 * function interface (the Python package reaches it through ctypes, so it
 * depends on no C++ ABI, PyTorch's included).
 *
 * In NCCL's style: an opaque communicator handle, every function returns an
 * asynctpResult_t, and asynctpGetLastError() gives the message of the last
 * failure on the calling thread (the asynctp::Error's text: it names the
 * argument and the rule). The codes are the C++ API's error kinds.
 *
 * Communicators are collective to make (every rank calls the init function
 * of its transport at the same time with the same unique id and world size):
 *   - the CPU multi-process transport: one rank per process of one host
 *     (asynctpCpuGetUniqueId on one process, the caller hands the id to the
 *     others, asynctpCpuCommInitRank on each);
 *   - NCCL, one rank per GPU: asynctpNcclGetUniqueId / asynctpNcclCommInitRank
 *     (the handle owns the ncclComm_t it creates), or asynctpCommFromNccl around
 *     an ncclComm_t the caller keeps. Only in a library built with the NCCL
 *     backend (asynctpHasNccl); elsewhere these return asynctpUnsupported.
 *
 * Matrices are 2-D: a pointer, a dtype, rows x cols and strides in elements
 * (asynctp::TensorView). The ops' rules and numerics are those of
 * asynctp/ops.hpp; on invalid arguments on any rank every rank fails and no
 * output is written. GPU calls are enqueued on options->stream (a
 * cudaStream_t) and return; asynctpSynchronize waits (bounded).
 */
#ifndef ASYNCTP_C_API_H
#define ASYNCTP_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ASYNCTP_C_API_VERSION 1

typedef enum {
  asynctpSuccess = 0,
  asynctpInvalidArgument = 1, /* an argument broke a documented rule */
  asynctpUnsupported = 2,     /* valid, but this build or path cannot run it */
  asynctpTimeout = 3,         /* a bounded wait expired (names what it waited for) */
  asynctpMismatch = 4,        /* the ranks disagreed (or a peer rejected its call) */
  asynctpBackendError = 5,    /* the runtime failed (BLAS, CUDA, NCCL, OS) */
  asynctpInternalError = 6    /* anything else (out of memory, a bug) */
} asynctpResult_t;

typedef enum { asynctpBf16 = 0, asynctpFp16 = 1, asynctpFp32 = 2 } asynctpDataType_t;

typedef enum { asynctpCpu = 0, asynctpCuda = 1, asynctpHip = 2 } asynctpDeviceKind_t;

typedef enum {
  asynctpAlgorithmDefault = 0, /* unset: ASYNCTP_ALGO, else the planner's choice */
  asynctpAlgorithmAuto = 1,
  asynctpAlgorithmNative = 2,
  asynctpAlgorithmPipelined = 3,
  asynctpAlgorithmDecomposed = 4
} asynctpAlgorithm_t;

typedef struct asynctpComm* asynctpComm_t;

/* Opaque ids, made on one rank and copied to the others by the caller. */
#define ASYNCTP_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[ASYNCTP_UNIQUE_ID_BYTES];
} asynctpCpuUniqueId;
typedef struct {
  char internal[ASYNCTP_UNIQUE_ID_BYTES];
} asynctpNcclUniqueId;

typedef struct {
  void* data;
  int32_t dtype;       /* asynctpDataType_t */
  int32_t device_kind; /* asynctpDeviceKind_t */
  int32_t device_index;
  int32_t reserved; /* 0 */
  int64_t rows;
  int64_t cols;
  int64_t row_stride; /* elements between (i, j) and (i + 1, j) */
  int64_t col_stride; /* elements between (i, j) and (i, j + 1) */
} asynctpMatrix;

/* The measured choice (ASYNCTP_TUNE; asynctp::Options::tune). */
typedef enum {
  asynctpTuneDefault = 0, /* unset: ASYNCTP_TUNE, else off */
  asynctpTuneOn = 1,      /* under auto, a problem's first calls measure every algorithm */
  asynctpTuneOff = 2
} asynctpTune_t;

/* Per-call options; a NULL pointer means all defaults. Zero fields are unset:
 * the ASYNCTP_* environment variable of the same meaning applies, then the
 * built-in default. */
typedef struct {
  int32_t algorithm; /* asynctpAlgorithm_t */
  int32_t tune;      /* asynctpTune_t */
  int64_t wait_timeout_ms; /* > 0, or 0: ASYNCTP_WAIT_TIMEOUT_MS */
  int64_t tile_m;          /* native tile rows, or 0: ASYNCTP_TILE_M */
  int64_t tile_n;          /* native tile columns, or 0: ASYNCTP_TILE_N */
  void* stream;            /* GPU: the cudaStream_t ordered on (NULL: legacy default) */
} asynctpOptions;

/* What a call ran (or a plan query would run) and why. */
#define ASYNCTP_REASON_BYTES 512
typedef struct {
  int32_t algorithm; /* asynctpAlgorithm_t: native, pipelined or decomposed */
  int32_t reserved;
  int64_t tile_m;
  int64_t tile_n;
  char reason[ASYNCTP_REASON_BYTES]; /* NUL-terminated, cut to fit */
} asynctpRunInfo;

/* The message of the calling thread's last failure ("" if none). Valid until
 * the thread's next asynctp call. */
const char* asynctpGetLastError(void);
/* A constant name of a result code ("success", "invalid_argument", ...). */
const char* asynctpGetErrorString(asynctpResult_t result);
/* ASYNCTP_C_API_VERSION of the library loaded. */
int asynctpGetVersion(void);
/* 1 when the library was built with the NCCL backend, else 0. */
int asynctpHasNccl(void);

/* CPU multi-process transport. gemm_workers: GEMM workers per rank (0: the
 * library's default); setup_timeout_ms: how long the ranks wait for each other
 * while making the communicator (0: 120 s). */
asynctpResult_t asynctpCpuGetUniqueId(asynctpCpuUniqueId* unique_id);
asynctpResult_t asynctpCpuCommInitRank(asynctpComm_t* comm, int world_size,
                                       const asynctpCpuUniqueId* unique_id, int rank,
                                       int gemm_workers, int64_t setup_timeout_ms);

/* NCCL. asynctpNcclCommInitRank makes the ncclComm_t on `device` (which it
 * makes current) and owns it; asynctpCommFromNccl wraps the caller's
 * ncclComm_t, which must outlive the handle. */
asynctpResult_t asynctpNcclGetUniqueId(asynctpNcclUniqueId* unique_id);
asynctpResult_t asynctpNcclCommInitRank(asynctpComm_t* comm, int world_size,
                                        const asynctpNcclUniqueId* unique_id, int rank,
                                        int device);
asynctpResult_t asynctpCommFromNccl(asynctpComm_t* comm, void* nccl_comm);

/* Local: frees the handle (and an ncclComm_t it owns). NULL is a no-op. */
asynctpResult_t asynctpCommDestroy(asynctpComm_t comm);

asynctpResult_t asynctpCommRank(asynctpComm_t comm, int* rank);
asynctpResult_t asynctpCommWorldSize(asynctpComm_t comm, int* world_size);
/* kind: asynctpDeviceKind_t of the tensors the communicator takes; name: a
 * constant string ("cpu", "cpu-process", "nccl", ...). Either may be NULL. */
asynctpResult_t asynctpCommBackend(asynctpComm_t comm, int* kind, const char** name);

/* The ops (asynctp/ops.hpp). a_gathered_out, options and info may be NULL. */
asynctpResult_t asynctpFusedAllGatherMatmul(asynctpComm_t comm, const asynctpMatrix* a_shard,
                                            const asynctpMatrix* b, const asynctpMatrix* c_out,
                                            const asynctpMatrix* a_gathered_out,
                                            const asynctpOptions* options, asynctpRunInfo* info);
asynctpResult_t asynctpFusedMatmulReduceScatter(asynctpComm_t comm, const asynctpMatrix* a,
                                                const asynctpMatrix* b, const asynctpMatrix* out,
                                                const asynctpOptions* options,
                                                asynctpRunInfo* info);

/* Plan queries: validate and say what the op would run, locally (nothing is
 * communicated or written). info must not be NULL. */
asynctpResult_t asynctpPlanFusedAllGatherMatmul(asynctpComm_t comm, const asynctpMatrix* a_shard,
                                                const asynctpMatrix* b,
                                                const asynctpMatrix* c_out,
                                                const asynctpMatrix* a_gathered_out,
                                                const asynctpOptions* options,
                                                asynctpRunInfo* info);
asynctpResult_t asynctpPlanFusedMatmulReduceScatter(asynctpComm_t comm, const asynctpMatrix* a,
                                                    const asynctpMatrix* b,
                                                    const asynctpMatrix* out,
                                                    const asynctpOptions* options,
                                                    asynctpRunInfo* info);

/* Collective, in the place of an op call: a rank whose caller rejected its
 * own arguments before any reached the library (a wrapper's checks) calls
 * this instead, so that the peers' op call fails on every rank naming this
 * rank and `message` rather than waiting for it. Returns asynctpSuccess once
 * the peers were told. The ops do the same themselves for arguments they
 * cannot read (a NULL matrix, an unknown dtype code). */
asynctpResult_t asynctpCommRejectCall(asynctpComm_t comm, const char* message);

/* Waits (bounded) for this rank's enqueued device work, then reports what
 * only the device saw. Immediate on the CPU. */
asynctpResult_t asynctpSynchronize(asynctpComm_t comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ASYNCTP_C_API_H */
