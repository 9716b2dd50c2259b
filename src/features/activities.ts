/**
 * The catalog's Node half: each built-in feature's activity implementations (its doors' Node
 * halves), which the worker registers under their doors' names. A built-in with activities adds
 * its list here and its entry to the workflow half (./catalog.ts). Node side.
 */
import type { ActivityImplementation } from '../activities/feature-activity';
import { agentsActivities } from './agents/activities/tasks';
import { budgetActivities } from './budget/activities/tree-budget';
import { spendActivities } from './budget/activities/spend';
import { contextCompressionActivities } from './context-compression/activities/tokens';
import { filesystemActivities } from './filesystem/activities/files';
import { skillsActivities } from './skills/activities/skills';
import { evalActivities } from './eval/activities/judge';
import { notifyActivities } from './notify/activities/deliver-notice';

/** How a receiver of Notify's notices checks their signature (keel-agents exports it). */
export { verifyNoticeSignature } from './notify/activities/deliver-notice';

/** Every built-in feature's activities. */
export const FEATURE_ACTIVITIES: readonly ActivityImplementation[] = [
  ...agentsActivities,
  ...budgetActivities,
  ...spendActivities,
  ...contextCompressionActivities,
  ...evalActivities,
  ...filesystemActivities,
  ...skillsActivities,
  ...notifyActivities,
];
