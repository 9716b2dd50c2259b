/**
 * A webhook receiver for keel's hold notices (docs/notify.md): `KEEL_HOOK_SECRET=... npx tsx
 * examples/notify/receiver.ts [port]` listens on 127.0.0.1 (port 8300 by default), checks each
 * notice's signature with `verifyNoticeSignature` (refusing, with 401, one that is forged or more
 * than five minutes old), skips a delivery it has already taken (a retried POST has the same
 * `X-Keel-Delivery`), and prints one line per notice: what happened, the run, the hold, and for a
 * raised hold its Approve and Deny links. Forward them to your chat or mail from here.
 */
import { createServer } from 'node:http';
import { verifyNoticeSignature, type HoldNotice } from 'keel-agents';

const secret = process.env.KEEL_HOOK_SECRET;
if (!secret) {
  console.error('set KEEL_HOOK_SECRET to the secret named in notify: (the same value the workers have)');
  process.exit(2);
}
const port = Number(process.argv[2] ?? 8300);
const taken = new Set<string>();

const server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    if (!verifyNoticeSignature({ body, header: request.headers['x-keel-signature'] as string | undefined, secret })) {
      console.log('refused: a notice whose signature does not verify');
      return void response.writeHead(401).end();
    }
    response.writeHead(204).end();
    const delivery = String(request.headers['x-keel-delivery']);
    if (taken.has(delivery)) return;
    taken.add(delivery);
    const notice = JSON.parse(body) as HoldNotice & { links?: { approve: string; deny: string } };
    const { hold, decision } = notice;
    const what = decision ? `${decision.decision} by ${decision.decidedBy ?? 'someone'}` : (hold.question ?? hold.kind);
    console.log(`${notice.type} ${notice.agent} ${notice.runId} ${hold.id} ${hold.toolName ?? ''}: ${what}`);
    if (notice.links) console.log(`  approve: ${notice.links.approve}\n  deny:    ${notice.links.deny}`);
  });
});
server.listen(port, '127.0.0.1', () => console.log(`receiving keel notices at http://127.0.0.1:${port}/`));
