/**
 * A chat page on a durable keel agent, built on the AI SDK's `useChat` with nothing of keel's:
 * `keel serve` answers the AI SDK's chat protocol at /api/chat/<agent> (docs/chat.md). Open it as
 * `index.html?agent=<agent>&keel=<keel serve's address>`; the chat id stays in the address's hash,
 * so a reload loads the chat's history and reattaches to a turn under way (`resume`). A tool call
 * held for approval shows Approve and Deny, answered with `addToolApprovalResponse`.
 */
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai';
import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

const params = new URLSearchParams(location.search);
const agent = params.get('agent') ?? 'assistant';
const keel = params.get('keel') ?? location.origin;
const api = `${keel}/api/chat/${encodeURIComponent(agent)}`;

/** The chat id: the address's hash, or a new one put there. */
function chatId(): string {
  if (!location.hash.slice(1)) history.replaceState(null, '', `#chat-${crypto.randomUUID()}`);
  return location.hash.slice(1);
}

/** The chat's messages so far, and whether a turn is under way (404: a new chat). */
async function loadChat(id: string): Promise<{ messages: UIMessage[]; streaming: boolean }> {
  const response = await fetch(`${api}/${encodeURIComponent(id)}`);
  if (response.status === 404) return { messages: [], streaming: false };
  if (!response.ok) throw new Error(((await response.json()) as { error: { message: string } }).error.message);
  const body = (await response.json()) as { messages: UIMessage[]; streaming?: string };
  return { messages: body.messages, streaming: Boolean(body.streaming) };
}

function Chat({ id, initial, streaming }: { id: string; initial: UIMessage[]; streaming: boolean }) {
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id,
    messages: initial,
    resume: streaming,
    transport: new DefaultChatTransport({ api }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState('');
  const submit = (event: { preventDefault(): void }) => {
    event.preventDefault();
    if (!input.trim()) return;
    void sendMessage({ text: input });
    setInput('');
  };
  return (
    <main>
      <h1>{agent}</h1>
      {messages.map((message) => (
        <section key={message.id} className={`message ${message.role}`} data-id={message.id}>
          {message.parts.map((part, index) => {
            if (part.type === 'text')
              return (
                <p key={index} className="text">
                  {part.text}
                </p>
              );
            if (!part.type.startsWith('tool-') || !('toolCallId' in part)) return null;
            return (
              <div key={index} className="tool" data-state={part.state}>
                <code>
                  {part.type.slice('tool-'.length)} {JSON.stringify(part.input)}
                </code>
                {part.state === 'output-available' && <span className="output"> → {JSON.stringify(part.output)}</span>}
                {part.state === 'output-denied' && <span className="output"> denied</span>}
                {part.state === 'approval-requested' && (
                  <span>
                    <button onClick={() => void addToolApprovalResponse({ id: part.approval.id, approved: true })}>Approve</button>
                    <button onClick={() => void addToolApprovalResponse({ id: part.approval.id, approved: false, reason: 'denied in the page' })}>Deny</button>
                  </span>
                )}
              </div>
            );
          })}
        </section>
      ))}
      {error && <p className="error">{error.message}</p>}
      <form onSubmit={submit}>
        <input value={input} onChange={(event) => setInput(event.target.value)} placeholder="Say something" disabled={status !== 'ready'} />
        <button type="submit" disabled={status !== 'ready'}>
          Send
        </button>
      </form>
      <p className="status">{status}</p>
    </main>
  );
}

function App() {
  const [id] = useState(chatId);
  const [loaded, setLoaded] = useState<{ messages: UIMessage[]; streaming: boolean } | Error>();
  useEffect(() => {
    loadChat(id).then(setLoaded, (error: Error) => setLoaded(error));
  }, [id]);
  if (loaded instanceof Error) return <p className="error">{loaded.message}</p>;
  if (!loaded) return <p>loading…</p>;
  return <Chat id={id} initial={loaded.messages} streaming={loaded.streaming} />;
}

createRoot(document.getElementById('root')!).render(<App />);
