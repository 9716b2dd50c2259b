/**
 * The inbox: every pending hold of the namespace, oldest first: runs' own, those of sub-agents
 * at any depth (listed once, at the topmost run that shows them, where the decision goes) and
 * background tasks whose launcher has ended. The list comes from the runs' memos (one
 * visibility listing), with what a person deciding needs (the question, the call's input cut
 * short, what the user asked, the agent and its run, the model's latest text); the full hold
 * (input, data, decision schema) from each shown run.
 */
import { useEffect, useState } from 'preact/hooks';
import { get, type HoldView, type Info, type Hold } from './api';
import { HoldCard } from './hold';

/** How many runs' holds are loaded in full at once. */
const SHOWN = 50;
const REFRESH_MS = 4000;

export function Inbox({ info }: { info: Info | undefined }) {
  const [holds, setHolds] = useState<HoldView[]>();
  const [full, setFull] = useState<Record<string, Hold[]>>({});
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [tick, setTick] = useState(0);

  useEffect(() => {
    let live = true;
    const load = async () => {
      try {
        const { holds: listed } = await get<{ holds: HoldView[] }>('/api/inbox');
        if (!live) return;
        setHolds(listed);
        setError(undefined);
        // Each run's holds in full as its answer comes: a run whose worker is slow (or gone) holds up no other card.
        const runs = [...new Set(listed.map((hold) => hold.runId))].slice(0, SHOWN);
        for (const runId of runs)
          void get<{ holds: Hold[] }>(`/api/runs/${encodeURIComponent(runId)}/holds`).then(
            ({ holds: detailed }) => live && setFull((current) => ({ ...current, [runId]: detailed })),
            () => undefined,
          );
      } catch (failure) {
        if (live) setError((failure as Error).message);
      }
    };
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [tick]);

  if (error) return <p class="error">could not list holds: {error}</p>;
  if (!holds) return <p>loading…</p>;
  return (
    <section class="inbox">
      <h1>
        Inbox{' '}
        <span class="count" data-testid="inbox-count">
          {holds.length}
        </span>
      </h1>
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      {holds.length === 0 ? <p class="empty">Nothing waits for a decision.</p> : null}
      {holds.map((hold) => {
        const detailed = full[hold.runId]?.find((candidate) => candidate.id === hold.id);
        return (
          <HoldCard
            key={`${hold.runId}/${hold.id}`}
            runId={hold.runId}
            hold={{ ...hold, ...detailed }}
            complete={detailed !== undefined}
            info={info}
            onDecided={(summary) => {
              setNotice(`${summary} (run ${hold.runId})`);
              setHolds((current) => current?.filter((other) => other !== hold));
              setTick((value) => value + 1);
            }}
          />
        );
      })}
    </section>
  );
}
