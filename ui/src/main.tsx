/** keel ui: the page. Routes: / (inbox), /runs, /runs/:runId, /start. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useRoute } from 'preact-iso';
import { get, markVerified, typedUserName, type Info } from './api';
import { Inbox } from './inbox';
import { RunView } from './run-view';
import { Runs, StartRun } from './runs';
import './style.css';

function RunPage({ info }: { info: Info | undefined }) {
  const { params } = useRoute();
  return <RunView key={params.runId} runId={decodeURIComponent(params.runId ?? '')} info={info} />;
}

/** "deciding as": the name typed here, else (shown as the placeholder) the server's default; a decision records the one shown. */
function Who({ info }: { info: Info | undefined }) {
  const [name, setName] = useState(typedUserName() ?? '');
  if (info?.verified)
    return (
      <span class="who" title="keel serve verified who you are: decisions you make here are recorded as you">
        deciding as <strong data-testid="user-name">{info.user}</strong> (verified)
      </span>
    );
  return (
    <label class="who" title="decisions you make here are recorded with this name">
      deciding as{' '}
      <input
        data-testid="user-name"
        value={name}
        placeholder={info?.user}
        onInput={(e) => {
          // Kept as typed: the server's default (which arrives later) never overwrites it.
          localStorage.setItem('keel.user', e.currentTarget.value);
          setName(e.currentTarget.value);
        }}
      />
    </label>
  );
}

function App() {
  const [info, setInfo] = useState<Info>();
  useEffect(
    () =>
      void get<Info>('/api/info').then(
        (loaded) => {
          markVerified(loaded.verified);
          setInfo(loaded);
        },
        () => undefined,
      ),
    [],
  );
  return (
    <LocationProvider>
      <nav>
        <a class="brand" href="/">
          keel
        </a>
        <a href="/">Inbox</a>
        <a href="/runs">Runs</a>
        <a href="/start">Start a run</a>
        <span class="where">{info ? `${info.namespace} · ${info.taskQueue} · ${info.address}` : ''}</span>
        <Who info={info} />
      </nav>
      <main>
        <Router>
          <Route path="/" component={() => <Inbox info={info} />} />
          <Route path="/runs" component={Runs} />
          <Route path="/runs/:runId" component={() => <RunPage info={info} />} />
          <Route path="/start" component={() => <StartRun info={info} />} />
          <Route
            default
            component={() => (
              <p>
                Nothing here. Go to the <a href="/">inbox</a>.
              </p>
            )}
          />
        </Router>
      </main>
    </LocationProvider>
  );
}

render(<App />, document.getElementById('app')!);
