// Which group of Neuron Explorer's Summary each summary field belongs to, and the order of the
// groups. Learned from the `summary_groups` and `summary_group_order` sections of AWS's JSON
// exports (`neuron-profile view --output-format json`), e.g.
// ../shared/samples/allenkchau-trainium-kernel-fusion/profiling/artifacts/fused_bf16_s512/json_reports/
// fused_exec_2_profile_full.json (profiler 2.28: 186 fields); the 9 AnchovyPark exports (154 fields)
// agree field for field. Facts only (field → group); no descriptions. Entries ending in `*` are
// prefixes (per-queue fields, matched case-insensitively). Fields within a group follow the
// Summary table's column order (explorer-schema.md), the others alphabetically.

/** Group keys in Explorer's order (`summary_group_order` 0–13). */
export const SUMMARY_GROUP_ORDER: readonly string[] = [
  'overall_stats', 'data_movement', 'software_data_movement', 'hardware_data_movement', 'tensor_engine',
  'vector_engine', 'scalar_engine', 'sync_engine', 'gpsimd_engine', 'cc_engine', 'system', 'throttling_nc0',
  'throttling_nc1', 'server_upload',
];

/**
 * Groups the exports name but leave out of `summary_group_order`: shown after the ordered ones,
 * before "other" (fields no export names).
 */
export const UNORDERED_GROUPS: readonly string[] = ['dma_queue', 'summary'];

/** Display titles of the groups. */
export const GROUP_TITLES: Record<string, string> = {
  overall_stats: 'Overall', data_movement: 'Data movement', software_data_movement: 'Software DMA',
  hardware_data_movement: 'Hardware DMA', tensor_engine: 'Tensor engine', vector_engine: 'Vector engine',
  scalar_engine: 'Scalar engine', sync_engine: 'Sync engine', gpsimd_engine: 'GpSimd engine', cc_engine: 'Collectives',
  system: 'System', throttling_nc0: 'Throttling nc0', throttling_nc1: 'Throttling nc1', server_upload: 'Server upload',
  dma_queue: 'DMA queues', summary: 'Active time', other: 'Other',
};

/** Group → fields (or `prefix*`). */
export const SUMMARY_GROUPS: Record<string, readonly string[]> = {
  overall_stats: [
    'total_time', 'neuroncore_cycle_count', 'model_flops', 'hardware_flops', 'transpose_flops',
    'mm_arithmetic_intensity', 'peak_flops_bandwidth_ratio', 'trace_count', 'event_count',
  ],
  data_movement: [
    'dma_active_cycles', 'dma_active_time', 'dma_active_time_percent', 'static_dma_active_time',
    'dynamic_dma_active_time_percent', 'static_dma_active_time_percent', 'dma_transfer_average_bytes',
    'dma_packet_time', 'dma_transfer_time', 'dma_transfer_count', 'dma_transfer_total_bytes',
    'dma_queue_count', 'inputs_and_weights_size_bytes', 'inputs_outputs_weights_size_bytes',
    'weight_size_bytes', 'static_dma_packet_count', 'static_dma_size', 'dynamic_dma_packet_percent',
    'static_dma_packet_percent', 'dynamic_dma_size_percent', 'static_dma_size_percent',
    'mbu_estimated_percent', 'mbu_min_read_util_percent', 'hbm_write_bytes', 'hbm_read_bytes',
    'sbuf_write_bytes', 'sbuf_read_bytes', 'spill_save_bytes', 'spill_reload_bytes', 'psum_write_bytes',
    'psum_read_bytes', 'psum_read_sbuf_write_count', 'psum_read_sbuf_write_bytes', 'input_queue_bytes',
    'output_queue_bytes', 'weight_queue_bytes',
  ],
  software_data_movement: [
    'software_dynamic_dma_active_time', 'software_dynamic_dma_active_time_percent',
    'software_dynamic_dma_packet_count', 'software_dynamic_dma_size', 'software_dynamic_dma_packet_percent',
    'software_dynamic_dma_size_percent',
  ],
  hardware_data_movement: [
    'hardware_dynamic_dma_active_time', 'hardware_dynamic_dma_active_time_percent',
    'hardware_dynamic_dma_packet_count', 'hardware_dynamic_dma_size', 'hardware_dynamic_dma_packet_percent',
    'hardware_dynamic_dma_size_percent',
  ],
  tensor_engine: [
    'tensor_engine_instruction_time', 'tensor_engine_active_time', 'tensor_engine_active_time_percent',
    'tensor_engine_instruction_count', 'matmul_instruction_count', 'mfu_estimated_percent',
    'mfu_max_achievable_estimated_percent', 'mfu_hlo_estimated_percent',
    'mfu_hlo_max_achievable_estimated_percent', 'mfu_inst_estimated_percent',
    'mfu_inst_max_achievable_estimated_percent', 'hfu_estimated_percent',
  ],
  vector_engine: [
    'vector_engine_instruction_time', 'vector_engine_active_time', 'vector_engine_active_time_percent',
    'vector_engine_instruction_count',
  ],
  scalar_engine: [
    'scalar_engine_instruction_time', 'scalar_engine_active_time', 'scalar_engine_active_time_percent',
    'scalar_engine_instruction_count', 'activate_instruction_time', 'activate_instruction_count',
  ],
  sync_engine: [
    'sync_engine_instruction_time', 'sync_engine_active_time', 'sync_engine_active_time_percent',
    'sync_engine_instruction_count',
  ],
  gpsimd_engine: [
    'gpsimd_engine_instruction_time', 'gpsimd_engine_active_time', 'gpsimd_engine_active_time_percent',
    'gpsimd_engine_instruction_count',
  ],
  cc_engine: [
    'cc_op_time', 'cc_op_active_time', 'cc_op_active_time_percent', 'cc_op_count',
    'cc_cores_instruction_time', 'cc_cores_instruction_active_time',
    'cc_cores_instruction_active_time_percent', 'cc_cores_instruction_count',
  ],
  system: [
    'collectives_version', 'compiler_version', 'driver_version', 'instance_type', 'nc_idx', 'nd_idx',
    'profiler_version', 'runtime_version', 'ultraserver_id', 'ultraserver_instance_index', 'ultraserver_size',
    'ultraserver_type',
  ],
  throttling_nc0: [
    'throttle_active_nc0_time_ns', 'throttle_activity_0_active_time_nc0_percent',
    'throttle_activity_0_avg_util_limit_nc0_percent', 'throttle_activity_1_active_time_nc0_percent',
    'throttle_activity_1_avg_util_limit_nc0_percent', 'throttle_activity_2_active_time_nc0_percent',
    'throttle_activity_2_avg_util_limit_nc0_percent', 'throttle_activity_3_active_time_nc0_percent',
    'throttle_activity_3_avg_util_limit_nc0_percent', 'throttle_avg_util_limit_nc0_percent',
    'throttle_gpio_0_active_time_nc0_percent', 'throttle_gpio_0_avg_util_limit_nc0_percent',
    'throttle_gpio_1_active_time_nc0_percent', 'throttle_gpio_1_avg_util_limit_nc0_percent',
    'throttle_gpio_2_active_time_nc0_percent', 'throttle_gpio_2_avg_util_limit_nc0_percent',
    'throttle_gpio_3_active_time_nc0_percent', 'throttle_gpio_3_avg_util_limit_nc0_percent',
    'throttle_gpio_4_active_time_nc0_percent', 'throttle_gpio_4_avg_util_limit_nc0_percent',
    'throttle_gpio_5_active_time_nc0_percent', 'throttle_gpio_5_avg_util_limit_nc0_percent',
    'throttle_gpio_6_active_time_nc0_percent', 'throttle_gpio_6_avg_util_limit_nc0_percent',
    'throttle_gpio_7_active_time_nc0_percent', 'throttle_gpio_7_avg_util_limit_nc0_percent',
    'throttle_periodic_active_time_nc0_percent', 'throttle_periodic_avg_util_limit_nc0_percent',
    'throttle_sw_0_active_time_nc0_percent', 'throttle_sw_0_avg_util_limit_nc0_percent',
    'throttle_sw_1_active_time_nc0_percent', 'throttle_sw_1_avg_util_limit_nc0_percent',
  ],
  throttling_nc1: [
    'throttle_active_nc1_time_ns', 'throttle_activity_0_active_time_nc1_percent',
    'throttle_activity_0_avg_util_limit_nc1_percent', 'throttle_activity_1_active_time_nc1_percent',
    'throttle_activity_1_avg_util_limit_nc1_percent', 'throttle_activity_2_active_time_nc1_percent',
    'throttle_activity_2_avg_util_limit_nc1_percent', 'throttle_activity_3_active_time_nc1_percent',
    'throttle_activity_3_avg_util_limit_nc1_percent', 'throttle_avg_util_limit_nc1_percent',
    'throttle_gpio_0_active_time_nc1_percent', 'throttle_gpio_0_avg_util_limit_nc1_percent',
    'throttle_gpio_1_active_time_nc1_percent', 'throttle_gpio_1_avg_util_limit_nc1_percent',
    'throttle_gpio_2_active_time_nc1_percent', 'throttle_gpio_2_avg_util_limit_nc1_percent',
    'throttle_gpio_3_active_time_nc1_percent', 'throttle_gpio_3_avg_util_limit_nc1_percent',
    'throttle_gpio_4_active_time_nc1_percent', 'throttle_gpio_4_avg_util_limit_nc1_percent',
    'throttle_gpio_5_active_time_nc1_percent', 'throttle_gpio_5_avg_util_limit_nc1_percent',
    'throttle_gpio_6_active_time_nc1_percent', 'throttle_gpio_6_avg_util_limit_nc1_percent',
    'throttle_gpio_7_active_time_nc1_percent', 'throttle_gpio_7_avg_util_limit_nc1_percent',
    'throttle_periodic_active_time_nc1_percent', 'throttle_periodic_avg_util_limit_nc1_percent',
    'throttle_sw_0_active_time_nc1_percent', 'throttle_sw_0_avg_util_limit_nc1_percent',
    'throttle_sw_1_active_time_nc1_percent', 'throttle_sw_1_avg_util_limit_nc1_percent',
  ],
  server_upload: [
    's3_bucket_path',
  ],
  dma_queue: [
    'qgpsimdioparam*', 'qgpsimdpio*', 'qgpsimdspillreload*', 'qscalarioparam*', 'qscalarpio*',
    'qscalarspillreload*', 'qsyncioparam*', 'qsyncpio0*', 'qsyncspillreload*', 'qvectorioparam*',
    'qvectorpio*', 'qvectorspillreload*',
  ],
  summary: [
    'total_active_time', 'total_active_time_percent',
  ],
};

const exact = new Map<string, string>();
const prefixes: [string, string][] = [];
for (const [group, fields] of Object.entries(SUMMARY_GROUPS)) {
  for (const f of fields) {
    if (f.endsWith('*')) prefixes.push([f.slice(0, -1).toLowerCase(), group]);
    else exact.set(f, group);
  }
}

/** The group of a summary field ("other" when no export names it). */
export function summaryGroup(field: string): string {
  const g = exact.get(field);
  if (g !== undefined) return g;
  const lower = field.toLowerCase();
  for (const [p, group] of prefixes) if (lower.startsWith(p)) return group;
  return 'other';
}

/** Every group key in display order, "other" last. */
export function groupOrder(): string[] {
  return [...SUMMARY_GROUP_ORDER, ...UNORDERED_GROUPS, 'other'];
}

/** Position of `field` inside its group's list (unknown fields after the listed ones). */
export function fieldRank(field: string): number {
  const list = SUMMARY_GROUPS[summaryGroup(field)] ?? [];
  const i = list.indexOf(field);
  return i < 0 ? list.length : i;
}
