/**
 * The page's calls to the keel ui server. Every change is a JSON POST with the X-Keel-UI
 * header (the server refuses changes without it: no cross-site form can send it).
 */
import type { HoldView } from '../../src/client/holds';
import type { RunListing } from '../../src/client/runs';
import type { RunEvent } from '../../src/client/run-events';
import type { RunView } from '../../src/ui/run-view';

export type { HoldView, RunListing, RunEvent, RunView };
export type { Hold, RunStatus } from '../../src/core/run';
export type { Message, Part } from '../../src/core/messages';

export interface Info {
  namespace: string;
  taskQueue: string;
  address: string;
  user: string;
  /** Set when keel serve verified who you are (auth on): decisions are recorded as `user`, which cannot be typed. */
  verified?: boolean;
  temporalUiUrl: string | null;
  agents: string[];
}

/** A failure the server answered with: its status and message. */
export class ApiError extends Error {
  constructor(
    readonly status: string,
    message: string,
  ) {
    super(message);
  }
}

async function answer<T>(response: Response): Promise<T> {
  const body = (await response.json().catch(() => ({}))) as { error?: { status: string; message: string } };
  if (!response.ok || body.error) throw new ApiError(body.error?.status ?? String(response.status), body.error?.message ?? response.statusText);
  return body as T;
}

export const get = async <T>(path: string): Promise<T> => answer<T>(await fetch(path, { headers: { accept: 'application/json' } }));

export const post = async <T>(path: string, body: unknown): Promise<T> =>
  answer<T>(await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-keel-ui': '1' }, body: JSON.stringify(body) }));

let verifiedUser = false;

/** The server verified who uses the page (`Info.verified`): decisions send no typed name. */
export function markVerified(verified: boolean | undefined): void {
  verifiedUser = verified === true;
}

/** The name the person typed in "deciding as" (kept in this browser); none: the server records its default, `info.user`. */
export function typedUserName(): string | undefined {
  // Verified by keel serve: the server records who you are, and takes no typed name.
  if (verifiedUser) return undefined;
  return localStorage.getItem('keel.user') || undefined;
}
