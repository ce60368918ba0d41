// A real, packaged OAuth 2.1 / OpenID Connect authorization server for toolc's end-to-end MCP
// OAuth test (runtime/tests/mcp_oauth_provider.rs): panva's `oidc-provider`, configured here and
// nothing else (no endpoint of our own, no token logic of our own).
//
//   node server.mjs '<settings as JSON>'
//
// settings: {
//   "port": 0,                                   // 0: a free loopback port
//   "resources": { "<MCP endpoint URL>": "jwt" | "opaque", ... },
//   "scope": "mcp:tools",                        // the scopes each resource offers
//   "accessTokenTTL": 5,                         // seconds: short, for the refresh step
//   "introspector": { "client_id": "...", "client_secret": "..." }  // the resource servers' client
// }
//
// Once listening it prints one line, `listening <issuer>`, on stdout; the test then waits for
// the discovery document. It runs until it is killed.
import Provider from 'oidc-provider';

const settings = JSON.parse(process.argv[2] ?? '{}');
const resources = settings.resources ?? {};
const scope = settings.scope ?? 'mcp:tools';
const accessTokenTTL = settings.accessTokenTTL ?? 5;
const introspector = settings.introspector ?? {
  client_id: 'mcp-resource-server',
  client_secret: 'resource-server-secret',
};

// The port is needed in the issuer before the provider listens: reserve it first.
const { createServer } = await import('node:http');
const port = await new Promise((resolve, reject) => {
  const probe = createServer();
  probe.once('error', reject);
  probe.listen(settings.port ?? 0, '127.0.0.1', () => {
    const { port: chosen } = probe.address();
    probe.close(() => resolve(chosen));
  });
});
const issuer = `http://127.0.0.1:${port}`;

const { randomBytes } = await import('node:crypto');
const provider = new Provider(issuer, {
  // The keys of the provider's signed session cookies, made fresh each run.
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  clients: [
    {
      // The MCP servers' own client: it may only introspect (no grant, no redirect).
      client_id: introspector.client_id,
      client_secret: introspector.client_secret,
      grant_types: [],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  // MCP clients register themselves (RFC 7591); rmcp registers a public client (`none`).
  features: {
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: {
      enabled: true,
      // The resource servers' client may introspect every client's tokens; a public client
      // only its own (the package's default rule, kept for them).
      allowedPolicy: async (ctx, client, token) => {
        if (client.clientId === introspector.client_id) return true;
        return client.clientAuthMethod !== 'none' || token.clientId === client.clientId;
      },
    },
    // The login and consent pages of the package itself (any login name, any password).
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A request that names no resource gets none (an ID token only); MCP clients name it.
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      // A refresh keeps the resource of the grant when it names none.
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resourceIndicator) => {
        const format = resources[resourceIndicator];
        if (!format) {
          throw new Provider.errors.InvalidTarget(`${resourceIndicator} is not a resource of this server`);
        }
        return {
          scope,
          audience: resourceIndicator,
          accessTokenTTL,
          accessTokenFormat: format === 'jwt' ? 'jwt' : 'opaque',
          ...(format === 'jwt' ? { jwt: { sign: { alg: 'ES256' } } } : {}),
        };
      },
    },
  },
  // ID tokens signed with the one key there is (the package's default is RS256).
  clientDefaults: { id_token_signed_response_alg: 'ES256' },
  // ES256 keys made at start (the default is one RS256 key): the JWT path signs with ES256.
  jwks: await keys(),
  scopes: ['openid', 'offline_access', ...scope.split(' ')],
  // PKCE for every client (OAuth 2.1), not only public ones.
  pkce: { methods: ['S256'], required: () => true },
  // A refresh token for every client allowed the grant, whether or not it asked for
  // `offline_access`: the refresh step must not depend on how a client picks its scopes.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  // Refresh tokens rotate (OAuth 2.1 for public clients).
  rotateRefreshToken: true,
  ttl: {
    AccessToken: accessTokenTTL,
    RefreshToken: 3600,
    Grant: 3600,
    Session: 3600,
    Interaction: 600,
    AuthorizationCode: 60,
  },
});
// A loopback test server: plain HTTP is the point.
provider.proxy = false;

provider.on('server_error', (_ctx, err) => console.error('server_error', err));

provider.listen(port, '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});

async function keys() {
  const { generateKeyPairSync } = await import('node:crypto');
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  return { keys: [{ ...jwk, kid: 'es256-1', alg: 'ES256', use: 'sig' }] };
}
