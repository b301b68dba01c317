/** SETTINGS of a read of a few granules by key, with the engine's own (`SqlRunner.pointReadSettings`). */
export function pointReadSettings(engineSettings: string | undefined): string {
  return engineSettings === undefined ? POINT_READ_SETTINGS : `${POINT_READ_SETTINGS}, ${engineSettings}`;
}

/**
 * A read of a few granules: one thread (more only add hand-offs) and no PREWHERE pass (the key
 * already chose granules that hold a match, so reading the key columns first filters nothing).
 * Together about a third less CPU per look-up.
 */
const POINT_READ_SETTINGS = 'max_threads = 1, optimize_move_to_prewhere = 0';
