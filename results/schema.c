/*
 * schema.c - the SQL of schema versions 1 to 3 of the results store (store.c runs
 * them as migrations; never edit a shipped version, add one). Version 1: runs,
 * configs, predictions, tasks, task_deps, events; 2: steps, indexes, the
 * event_pairs view; 3: the Nsight Systems export trace tables and the trace_tasks
 * view.
 */
#include "results/store_parts.h"

const char zb_schema_v1[] =
	"CREATE TABLE runs("
	" id INTEGER PRIMARY KEY,"
	" kind TEXT NOT NULL,"
	" started_at TEXT NOT NULL,"
	" finished_at TEXT,"
	" status TEXT NOT NULL DEFAULT 'running',"
	" host TEXT, version TEXT, git_commit TEXT, device TEXT, command TEXT);"
	"CREATE TABLE configs("
	" id INTEGER PRIMARY KEY,"
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" hw TEXT, link TEXT, gpu TEXT, cpu TEXT, cpu_cores INTEGER, model TEXT,"
	" policy TEXT, ratio REAL, offload_param INTEGER, prefetch_layers INTEGER,"
	" ckpt TEXT, gas INTEGER, micro_batch INTEGER, seq INTEGER, dtype TEXT,"
	" pageable INTEGER, bucket_params INTEGER, cpu_threads INTEGER, steps INTEGER,"
	" params INTEGER, config_json TEXT);"
	"CREATE TABLE predictions("
	" config_id INTEGER PRIMARY KEY REFERENCES configs(id) ON DELETE CASCADE,"
	" fits INTEGER NOT NULL, fit_reason TEXT,"
	" total_s REAL, step_time_s REAL, tokens_per_s REAL, tflops_per_gpu REAL,"
	" bottleneck TEXT, lower_bound_s REAL, bound_resource TEXT,"
	" busy_gpu_s REAL, busy_d2h_s REAL, busy_h2d_s REAL, busy_cpu_s REAL, busy_gpu_opt_s REAL,"
	" work_gpu_s REAL, work_d2h_s REAL, work_h2d_s REAL, work_cpu_s REAL, work_gpu_opt_s REAL,"
	" pcie_h2d_bytes REAL, pcie_d2h_bytes REAL, gpu_bytes REAL, host_bytes REAL,"
	" events INTEGER);"
	"CREATE TABLE tasks("
	" config_id INTEGER NOT NULL REFERENCES configs(id) ON DELETE CASCADE,"
	" task_id INTEGER NOT NULL,"
	" kind TEXT NOT NULL, resource TEXT NOT NULL, op TEXT NOT NULL, pass TEXT NOT NULL,"
	" step INTEGER, micro INTEGER, unit INTEGER, bucket INTEGER,"
	" flops REAL, bytes REAL, params INTEGER, param_offset INTEGER,"
	" m INTEGER, n INTEGER, k INTEGER, batch INTEGER,"
	" PRIMARY KEY(config_id, task_id)) WITHOUT ROWID;"
	"CREATE TABLE task_deps("
	" config_id INTEGER NOT NULL REFERENCES configs(id) ON DELETE CASCADE,"
	" task_id INTEGER NOT NULL, dep_id INTEGER NOT NULL,"
	" PRIMARY KEY(config_id, task_id, dep_id)) WITHOUT ROWID;"
	"CREATE TABLE events("
	" config_id INTEGER NOT NULL REFERENCES configs(id) ON DELETE CASCADE,"
	" source TEXT NOT NULL CHECK(source IN ('predicted', 'measured')),"
	" task_id INTEGER NOT NULL,"
	" start_ns INTEGER NOT NULL,"
	" end_ns INTEGER NOT NULL CHECK(end_ns >= start_ns),"
	" PRIMARY KEY(config_id, source DESC, task_id)) WITHOUT ROWID;"
	"PRAGMA application_id = " ZB_STR(ZB_APP_ID) ";";

const char zb_schema_v2[] =
	"CREATE TABLE steps("
	" config_id INTEGER NOT NULL REFERENCES configs(id) ON DELETE CASCADE,"
	" source TEXT NOT NULL CHECK(source IN ('predicted', 'measured')),"
	" step INTEGER NOT NULL,"
	" time_s REAL,"
	" PRIMARY KEY(config_id, source, step)) WITHOUT ROWID;"
	"CREATE INDEX configs_run ON configs(run_id);"
	"CREATE INDEX runs_kind ON runs(kind, started_at);"
	"CREATE VIEW event_pairs AS SELECT"
	" p.config_id AS config_id, p.task_id AS task_id,"
	" t.kind AS kind, t.resource AS resource, t.op AS op, t.step AS step,"
	" p.start_ns AS pred_start_ns, p.end_ns AS pred_end_ns,"
	" m.start_ns AS meas_start_ns, m.end_ns AS meas_end_ns"
	" FROM events p"
	" JOIN events m ON m.config_id = p.config_id AND m.source = 'measured'"
	"  AND m.task_id = p.task_id"
	" LEFT JOIN tasks t ON t.config_id = p.config_id AND t.task_id = p.task_id"
	" WHERE p.source = 'predicted';";

/* Version 3: the trace of `zbench run --trace` in the tables and columns of the
 * Nsight Systems SQLite export (schema 3.28 names, nanosecond units), so SQL written
 * for an nsys export runs here; only the columns zbench records are filled, and
 * nsys columns it never has are left out. Each trace row also carries zbConfigId
 * (the configuration, so several runs share one file: filter on it) and, where a
 * record maps to a schedule task, zbTaskId (the events/tasks task_id). Times are
 * nanoseconds from the run's time zero, the zero of events.start_ns, so trace rows
 * and predicted events compare directly (setup work before it is negative).
 * Text ids (nameId, demangledName, ...) point into StringIds, shared by all runs.
 * Deleting a configuration deletes its trace rows (triggers: the trace tables carry
 * no foreign key, which would cost a lookup per inserted row). */
const char zb_schema_v3[] =
	"CREATE TABLE StringIds(id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE UNIQUE INDEX zb_StringIds_value ON StringIds(value);"
	"CREATE TABLE ThreadNames(nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER,"
	" zbConfigId INTEGER);"
	"CREATE TABLE TARGET_INFO_GPU(vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,"
	" busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER,"
	" memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, uuid TEXT,"
	" luid INTEGER, chipName TEXT, cuDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER,"
	" zbConfigId INTEGER);"
	"CREATE TABLE TARGET_INFO_NVTX_CUDA_STREAM(name TEXT NOT NULL, hwId INTEGER NOT NULL,"
	" vmId INTEGER NOT NULL, processId INTEGER NOT NULL, deviceId INTEGER NOT NULL,"
	" contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, zbConfigId INTEGER, zbResource TEXT);"
	"CREATE TABLE META_DATA_EXPORT(name TEXT NOT NULL, value TEXT, zbConfigId INTEGER);"
	"CREATE TABLE ENUM_CUDA_MEMCPY_OPER(id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
	"CREATE TABLE ENUM_CUDA_MEM_KIND(id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
	"CREATE TABLE ENUM_CUPTI_SYNC_TYPE(id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
	"CREATE TABLE ENUM_NSYS_EVENT_CLASS(id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
	"CREATE TABLE ENUM_NSYS_EVENT_TYPE(id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
	"CREATE TABLE ENUM_CUPTI_OVERHEAD_TYPE(id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
	" streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
	" demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,"
	" launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,"
	" gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,"
	" blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,"
	" staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,"
	" localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,"
	" gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,"
	" sharedMemoryLimitConfig INTEGER, graphId INTEGER, clusterX INTEGER, clusterY INTEGER,"
	" clusterZ INTEGER, zbConfigId INTEGER, zbTaskId INTEGER);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
	" streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,"
	" copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,"
	" srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER,"
	" migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER, copyCount INTEGER,"
	" zbConfigId INTEGER, zbTaskId INTEGER);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
	" streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL,"
	" bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER, zbConfigId INTEGER,"
	" zbTaskId INTEGER);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,"
	" nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER,"
	" zbConfigId INTEGER, zbTaskId INTEGER);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start INTEGER NOT NULL,"
	" end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,"
	" greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
	" deprecatedSyncType INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL,"
	" eventSyncId INTEGER, zbConfigId INTEGER, zbTaskId INTEGER);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_OVERHEAD(start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,"
	" overheadType INTEGER NOT NULL, zbConfigId INTEGER);"
	"CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,"
	" rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,"
	" endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,"
	" int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,"
	" floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT,"
	" eventId INTEGER NOT NULL PRIMARY KEY, zbConfigId INTEGER, zbTaskId INTEGER, zbKind TEXT);"
	"INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES"
	" (0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown'), (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'),"
	" (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'), (3, 'CUDA_MEMCPY_KIND_HTOA', 'Host-to-Array'),"
	" (4, 'CUDA_MEMCPY_KIND_ATOH', 'Array-to-Host'), (5, 'CUDA_MEMCPY_KIND_ATOA', 'Array-to-Array'),"
	" (6, 'CUDA_MEMCPY_KIND_ATOD', 'Array-to-Device'), (7, 'CUDA_MEMCPY_KIND_DTOA', 'Device-to-Array'),"
	" (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device'), (9, 'CUDA_MEMCPY_KIND_HTOH', 'Host-to-Host'),"
	" (10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer');"
	"INSERT INTO ENUM_CUDA_MEM_KIND VALUES"
	" (0, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown'),"
	" (1, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'),"
	" (2, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'),"
	" (3, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'),"
	" (4, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'),"
	" (5, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed'),"
	" (6, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static'),"
	" (7, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static');"
	"INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES"
	" (0, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN', 'Unknown'),"
	" (1, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE', 'Event sync'),"
	" (2, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT', 'Stream wait sync'),"
	" (3, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE', 'Stream sync'),"
	" (4, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE', 'Context sync');"
	"INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES"
	" (0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA runtime'),"
	" (1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER', 'CUDA driver');"
	"INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (59, 'NvtxPushPopRange', 'NVTX PushPop Range');"
	"INSERT INTO ENUM_CUPTI_OVERHEAD_TYPE VALUES"
	" (0, 'CUPTI_ACTIVITY_OVERHEAD_UNKNOWN', 'Unknown'),"
	" (1, 'CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER', 'Driver compiler'),"
	" (65536, 'CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH', 'Buffer flush'),"
	" (131072, 'CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION', 'Instrumentation'),"
	" (196608, 'CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE', 'Resource'),"
	" (262144, 'CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING', 'Module loading'),"
	" (327680, 'CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING', 'Lazy function loading'),"
	" (393216, 'CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL', 'Command buffer full'),"
	" (458752, 'CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST', 'Activity buffer request'),"
	" (524288, 'CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT', 'UVM activity init');"
	"INSERT INTO META_DATA_EXPORT(name, value) VALUES ('EXPORT_SCHEMA_VERSION', '3.28.1'),"
	" ('EXPORT_PROGRAM_NAME', 'zbench'), ('ZB_TIME_UNIT', 'ns'),"
	" ('ZB_TIME_ORIGIN', 'the time zero of each run (events.start_ns = 0)');"
	"CREATE TRIGGER zb_trace_cascade AFTER DELETE ON configs BEGIN"
	" DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE zbConfigId = old.id;"
	" DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE zbConfigId = old.id;"
	" DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE zbConfigId = old.id;"
	" DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE zbConfigId = old.id;"
	" DELETE FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE zbConfigId = old.id;"
	" DELETE FROM CUPTI_ACTIVITY_KIND_OVERHEAD WHERE zbConfigId = old.id;"
	" DELETE FROM NVTX_EVENTS WHERE zbConfigId = old.id;"
	" DELETE FROM ThreadNames WHERE zbConfigId = old.id;"
	" DELETE FROM TARGET_INFO_GPU WHERE zbConfigId = old.id;"
	" DELETE FROM TARGET_INFO_NVTX_CUDA_STREAM WHERE zbConfigId = old.id;"
	" DELETE FROM META_DATA_EXPORT WHERE zbConfigId = old.id;"
	" END;"
	/* one row per task of a traced run: where its GPU records (kernels, copies,
	 * memsets) or, for a CPU task, its CPU span (zbKind 'task') lie, beside the
	 * prediction */
	"CREATE VIEW trace_tasks AS"
	" WITH gpu AS ("
	"  SELECT zbConfigId AS config_id, zbTaskId AS task_id, start, end, 0 AS bytes"
	"   FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE zbTaskId IS NOT NULL"
	"  UNION ALL SELECT zbConfigId, zbTaskId, start, end, bytes"
	"   FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE zbTaskId IS NOT NULL"
	"  UNION ALL SELECT zbConfigId, zbTaskId, start, end, 0"
	"   FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE zbTaskId IS NOT NULL"
	"  UNION ALL SELECT zbConfigId, zbTaskId, start, end, 0"
	"   FROM NVTX_EVENTS WHERE zbKind = 'task' AND zbTaskId IS NOT NULL)"
	" SELECT g.config_id, g.task_id, t.kind, t.resource, t.op, t.step,"
	"  min(g.start) AS trace_start_ns, max(g.end) AS trace_end_ns, count(*) AS records,"
	"  sum(g.bytes) AS bytes, p.start_ns AS pred_start_ns, p.end_ns AS pred_end_ns"
	" FROM gpu g"
	" LEFT JOIN tasks t ON t.config_id = g.config_id AND t.task_id = g.task_id"
	" LEFT JOIN events p ON p.config_id = g.config_id AND p.source = 'predicted'"
	"  AND p.task_id = g.task_id"
	" GROUP BY g.config_id, g.task_id;";

/* Version 4: runs of another framework (DeepSpeed, plain PyTorch) measured by
 * peers/ds_step.py or imported from a TSV of such runs, one row per configuration
 * beside zbench's prediction of it (configs, predictions); written and read by
 * results/peers.c (peers.h), which documents the columns. The peer_vs_predicted
 * view puts measured and predicted side by side. */
const char zb_schema_v4[] =
	"CREATE TABLE peer_runs("
	" config_id INTEGER PRIMARY KEY REFERENCES configs(id) ON DELETE CASCADE,"
	" framework TEXT NOT NULL, name TEXT NOT NULL,"
	" source TEXT NOT NULL CHECK(source IN ('harness', 'import')), origin TEXT, note TEXT,"
	" step_ms REAL NOT NULL CHECK(step_ms > 0), steps_ms TEXT, warmup_steps INTEGER,"
	" fwd_ms REAL, bwd_ms REAL, opt_ms REAL,"
	" gpu_peak_gib REAL, gpu_reserved_gib REAL, host_rss_gib REAL, params INTEGER,"
	" device TEXT, versions TEXT, measured_at TEXT, result_json TEXT);"
	"CREATE VIEW peer_vs_predicted AS SELECT"
	" c.run_id AS run_id, m.config_id AS config_id, m.framework AS framework, m.name AS name,"
	" c.model AS model, c.micro_batch AS micro_batch, c.seq AS seq, c.gas AS gas,"
	" m.step_ms AS measured_ms, p.step_time_s * 1e3 AS predicted_ms,"
	" (p.step_time_s * 1e3 - m.step_ms) / m.step_ms AS error,"
	" m.gpu_peak_gib AS gpu_measured_gib, p.gpu_bytes / 1073741824.0 AS gpu_predicted_gib,"
	" m.host_rss_gib AS host_measured_gib, p.host_bytes / 1073741824.0 AS host_predicted_gib"
	" FROM peer_runs m JOIN configs c ON c.id = m.config_id"
	" LEFT JOIN predictions p ON p.config_id = m.config_id;";

/* Version 5: traces of programs zbench did not write (zbench trace, zbench import):
 * the CPU time of each thread of the traced process tree per sampling interval
 * (profiler/procsample.h; start/end in ns from the run's time zero, globalTid as in
 * the nsys tables), and the per-step analysis of a trace (zbench analyze). */
const char zb_schema_v5[] =
	"CREATE TABLE ZB_THREAD_CPU(start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, cpuNs INTEGER NOT NULL, zbConfigId INTEGER);"
	"CREATE INDEX zb_thread_cpu_config ON ZB_THREAD_CPU(zbConfigId, start);"
	"CREATE TABLE trace_steps("
	" config_id INTEGER NOT NULL REFERENCES configs(id) ON DELETE CASCADE,"
	" step INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
	" compute_s REAL, h2d_s REAL, d2h_s REAL, h2d_bytes REAL, d2h_bytes REAL,"
	" compute_only_s REAL, copy_only_s REAL, overlap_s REAL, idle_s REAL,"
	" idle_cpu_s REAL, cpu_opt_s REAL, cpu_core_s REAL, kernels INTEGER, copies INTEGER,"
	" found_by TEXT, PRIMARY KEY(config_id, step)) WITHOUT ROWID;"
	"CREATE TRIGGER zb_thread_cpu_cascade AFTER DELETE ON configs BEGIN"
	" DELETE FROM ZB_THREAD_CPU WHERE zbConfigId = old.id;"
	" END;";

/* Version 6: hardware profiles and baselines (results/records.h). IF NOT EXISTS:
 * zbench before version 6 created these tables on first use, outside the version. */
const char zb_schema_v6[] =
	"CREATE TABLE IF NOT EXISTS hw_profiles("
	" id INTEGER PRIMARY KEY,"
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" name TEXT, path TEXT, hw_json TEXT NOT NULL, measurements_json TEXT);"
	"CREATE TABLE IF NOT EXISTS baselines("
	" id INTEGER PRIMARY KEY,"
	" tag TEXT NOT NULL UNIQUE,"
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" suite TEXT NOT NULL,"
	" source TEXT NOT NULL CHECK(source IN ('predicted', 'measured')),"
	" repeats INTEGER NOT NULL, warmup INTEGER, steps INTEGER, hw_json TEXT,"
	" created_at TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS baseline_results("
	" baseline_id INTEGER NOT NULL REFERENCES baselines(id) ON DELETE CASCADE,"
	" key TEXT NOT NULL,"
	" config_id INTEGER REFERENCES configs(id) ON DELETE SET NULL,"
	" label TEXT, step_time_s REAL, tokens_per_s REAL, samples TEXT,"
	" PRIMARY KEY(baseline_id, key)) WITHOUT ROWID;";

/* Version 7: several GPUs. The collectives' resource (graph.h ZB_RES_COMM)
 * gets its busy and work columns (NULL in rows written before). The GPUs and nodes of
 * a configuration are in config_json (json_extract(config_json, '$.policy.gpus')). */
const char zb_schema_v7[] =
	"ALTER TABLE predictions ADD COLUMN busy_comm_s REAL;"
	"ALTER TABLE predictions ADD COLUMN work_comm_s REAL;";

/* Version 8: several GPUs executed (exec/ranks_cuda.c). The 'measured'
 * events and steps of a configuration are its slowest rank's (the step time of a
 * data-parallel run); ranks holds every rank's summary and rank_events every rank's
 * timeline, each on that rank's own time zero, which lies t0_offset_ns after rank
 * 0's. */
const char zb_schema_v8[] =
	"CREATE TABLE ranks("
	" config_id INTEGER NOT NULL REFERENCES configs(id) ON DELETE CASCADE,"
	" rank INTEGER NOT NULL, device TEXT, cpu_threads INTEGER, t0_offset_ns INTEGER,"
	" step_time_s REAL, slowest INTEGER NOT NULL DEFAULT 0,"
	" busy_gpu_s REAL, busy_d2h_s REAL, busy_h2d_s REAL, busy_cpu_s REAL, busy_gpu_opt_s REAL, busy_comm_s REAL,"
	" PRIMARY KEY(config_id, rank)) WITHOUT ROWID;"
	"CREATE TABLE rank_events("
	" config_id INTEGER NOT NULL REFERENCES configs(id) ON DELETE CASCADE,"
	" rank INTEGER NOT NULL, task_id INTEGER NOT NULL,"
	" start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL CHECK(end_ns >= start_ns),"
	" PRIMARY KEY(config_id, rank, task_id)) WITHOUT ROWID;";

/* Version 9: what the harness measures of a Hugging Face model under DeepSpeed (peers.h):
 * its model_type, the steps skipped on fp16 overflows, and DeepSpeed's per-step path
 * counts (a JSON object of numbers). NULL in rows written before. */
const char zb_schema_v9[] =
	"ALTER TABLE peer_runs ADD COLUMN model_type TEXT;"
	"ALTER TABLE peer_runs ADD COLUMN skipped_steps INTEGER;"
	"ALTER TABLE peer_runs ADD COLUMN ds_counts TEXT;";
