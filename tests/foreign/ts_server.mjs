// A server on the TypeScript SDK v2 (npm @modelcontextprotocol/server 2.4.0 + @modelcontextprotocol/node 2.1.2 + zod 4),
// written the way its README shows: no mcplab code. Usage: node ts_server.mjs PORT (binds 127.0.0.1 only).
// It prints "listening PORT" once it serves.
import http from 'node:http';
import { McpServer, createMcpHandler, completable } from '@modelcontextprotocol/server';
import { toNodeHandler, localhostHostValidation, localhostOriginValidation } from '@modelcontextprotocol/node';
import * as z from 'zod';

const port = Number(process.argv[2] || 0);

function factory() {
    const server = new McpServer({ name: 'ts-sdk-fixture', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool('echo', {
        description: 'Repeat a text a number of times',
        inputSchema: z.object({ text: z.string().max(40), times: z.number().int().min(1).max(3) }),
        annotations: { readOnlyHint: true },
    }, async ({ text, times }) => ({ content: [{ type: 'text', text: Array(times).fill(text).join(' ') }] }));
    server.registerTool('add', {
        description: 'Add two integers',
        inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
        outputSchema: z.object({ sum: z.number().int() }),
        annotations: { readOnlyHint: true },
    }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }));
    server.registerTool('count', {
        description: 'Count to three, reporting progress',
        annotations: { readOnlyHint: true },
    }, async (ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        for (let i = 1; i <= 3; i++) {
            if (token !== undefined) {
                await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: 3 } });
            }
            await new Promise((r) => setTimeout(r, 20));
        }
        return { content: [{ type: 'text', text: 'counted to 3' }] };
    });
    server.registerTool('delete_everything', {
        description: 'A tool with effects: never called unless the caller says so',
        annotations: { destructiveHint: true },
    }, async () => ({ content: [{ type: 'text', text: 'nothing deleted (fixture)' }] }));
    server.registerResource('readme', 'file:///fixture/readme.txt', { description: 'A fixed text', mimeType: 'text/plain' },
        async (uri) => ({ contents: [{ uri: uri.href, text: 'hello from the TypeScript fixture' }] }));
    server.registerPrompt('greet', {
        description: 'Greet someone',
        argsSchema: z.object({ name: completable(z.string(), (v) => ['Ada', 'Alan', 'Grace'].filter((n) => n.startsWith(v))) }),
    }, ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello ${name}` } }] }));
    return server;
}

const handler = toNodeHandler(createMcpHandler(factory, { legacy: 'stateless' }));
const hostOk = localhostHostValidation();
const originOk = localhostOriginValidation();
const srv = http.createServer((req, res) => {
    if (!hostOk(req, res) || !originOk(req, res)) return;
    void handler(req, res);
});
srv.listen(port, '127.0.0.1', () => { console.log(`listening ${srv.address().port}`); });
process.on('SIGTERM', () => srv.close(() => process.exit(0)));
