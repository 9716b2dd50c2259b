/** Small formatting helpers of the page. */

/** How long ago an ISO time was, in words a person reads at a glance. */
export function age(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.round(minutes / 60);
  return hours < 48 ? `${hours}h` : `${Math.round(hours / 24)}d`;
}

/** JSON for a person: indented, and cut when long (`full` keeps it whole). */
export function json(value: unknown, full = false): string {
  const text = JSON.stringify(value, null, 2) ?? 'undefined';
  return full || text.length <= 600 ? text : `${text.slice(0, 600)}…`;
}
