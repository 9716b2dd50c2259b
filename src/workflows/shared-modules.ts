/**
 * zod, configured, as the first module a workflow thread loads for all its runs (the SDK's
 * `preloadModules`; the workflow entry, keel's workflow code with it, comes next: see
 * `keelBundleOptions`). The SDK deep-freezes what preloaded modules export, and any state they
 * keep is shared by every run in the thread. Re-exported so that webpack keeps it: a package
 * marked free of side effects that is only `require`d for its side effects is dropped.
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
