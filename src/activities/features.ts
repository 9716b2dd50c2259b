/**
 * The Node halves of keel's built-in features, merged by the worker: each feature's activity
 * implementations (its doors), registered under their doors' names. A built-in with I/O adds
 * its list here and its middleware to the catalog (src/middleware/catalog.ts). Node side.
 */
import type { ActivityImplementation } from './feature-activity';
import { filesystemActivities } from '../features/filesystem/activities/files';
import { skillsActivities } from '../features/skills/activities/skills';
import { contextCompressionActivities } from '../features/context-compression/activities/tokens';
import { budgetActivities } from '../features/budget/activities/tree-budget';

/** Every built-in feature's activities. */
export const FEATURE_ACTIVITIES: readonly ActivityImplementation[] = [
  ...filesystemActivities,
  ...skillsActivities,
  ...contextCompressionActivities,
  ...budgetActivities,
];
