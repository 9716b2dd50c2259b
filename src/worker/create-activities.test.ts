import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { defineConfig } from '../config/load';
import { callModelDoor, callToolDoor, resolveAgentDoor, signProofsDoor, validateToolOutputDoor, verifyProofsDoor } from '../engine/activities';
import { FEATURE_ACTIVITIES } from '../features/activities';
import { Registry } from '../registry';
import { createActivities } from './create-activities';

describe('createActivities', () => {
  it('registers every door the workflow calls under its name: the core ones, then each feature one, and nothing else', () => {
    const activities = createActivities({ registry: new Registry(), config: defineConfig({}), client: Object.create(null) as Client });
    const core = [resolveAgentDoor, callModelDoor, callToolDoor, validateToolOutputDoor, signProofsDoor, verifyProofsDoor];
    expect(Object.keys(activities).sort()).toEqual([...core.map((door) => door.name), ...FEATURE_ACTIVITIES.map((activity) => activity.name)].sort());
  });
});
