/**
 * An AI SDK provider's model as a keel model, from code. List this module under `modules:`
 * in temporal.yaml (with `@ai-sdk/openai-compatible` installed and Ollama serving on its
 * default port), then `KEEL_DEMO_MODEL=ollama/llama3.1 npm start` runs the demo on it. The
 * docs/models.md shows the same model declared in temporal.yaml instead.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { aiSdkModel } from 'keel-agents';

const ollama = createOpenAICompatible({ name: 'ollama', baseURL: process.env.OLLAMA_BASE_URL ?? 'http://127.0.0.1:11434/v1' });

export const llama = aiSdkModel({ name: 'ollama/llama3.1', model: ollama('llama3.1'), config: { temperature: 0 } });
