import { describe, expect, it } from 'vitest';
import { freePort } from '../node/ports';
import { temporalRefusal } from './connect';

describe('temporalRefusal', () => {
  it('says at once that nothing listens, and says nothing when a proxy carries the connection', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const started = Date.now();
    expect(await temporalRefusal(address, 2000, {})).toBe('nothing accepts connections there (connection refused)');
    expect(Date.now() - started).toBeLessThan(1000);
    // gRPC goes through the proxy: a direct probe of the address says nothing of what the proxy reaches.
    expect(await temporalRefusal(address, 2000, { HTTPS_PROXY: 'http://proxy.internal:3128' })).toBeUndefined();
    expect(await temporalRefusal(address, 2000, { grpc_proxy: 'http://proxy.internal:3128' })).toBeUndefined();
  });
});
