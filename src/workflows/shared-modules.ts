/**
 * The modules a workflow thread loads once and shares between every run it holds (the SDK's
 * `preloadModules`), instead of evaluating them again for each run. Only stateless libraries
 * belong here: the SDK deep-freezes what they export, and any state they keep is shared by
 * every run in the thread. Re-exported so that webpack keeps them: a package marked free of
 * side effects that is only `require`d for its side effects is dropped from the bundle.
 */
import { z } from 'zod';

// zod fills in its global config (English messages, the parse memoizer) when the first schema
// of a kind is built, and finds out once whether `new Function` works. Do all three now, to the
// same defaults, before the SDK freezes zod's exports (and that config with them). A zod that
// set anything else lazily would fail every workflow task ("object is not extensible"), so
// package.json pins zod exactly and an upgrade has to pass the suite (test/shared-modules.test.ts
// replays every recorded history on one thread's shared zod).
z.config(z.locales.en());
z.config({ memoizer: z.core.memoizer() });
if (!z.core.util.allowsEval.value) z.config({ jitless: true });

export * as zod from 'zod';
