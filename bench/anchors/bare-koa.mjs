/**
 * Anchor: bare Koa answering a small JSON body: the ceiling of any Koa service on this box.
 * Usage: PORT=… node bench/anchors/bare-koa.mjs
 */
import Koa from 'koa';

const app = new Koa();
app.use((ctx) => {
  ctx.body = { status: 'ok', sub: 'bench-user' };
});
app.listen(Number(process.env.PORT), '127.0.0.1');

// Stop on SIGTERM by exiting normally: Node writes a --cpu-prof profile only at a normal exit.
process.once('SIGTERM', () => process.exit(0));
