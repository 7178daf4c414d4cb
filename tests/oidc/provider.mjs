// A campus OpenID provider for the portal's tests and benchmark: oidc-provider (a certified implementation) on
// 127.0.0.1, with a sign-in page that checks the password of a test account and a consent page.
//
//   node provider.mjs            reads its settings from the environment:
//     OIDC_TEST_PORT             the port on 127.0.0.1 (required)
//     OIDC_TEST_ACCOUNTS         a JSON file {"<login>": {"password": "...", "claims": {...}}}, read on every sign-in
//                                so tests can add accounts while it runs
//     OIDC_TEST_CLIENT_ID, OIDC_TEST_CLIENT_SECRET, OIDC_TEST_REDIRECT_URI, OIDC_TEST_POST_LOGOUT_URI
//
// The client is a "native" one so that its loopback redirect URI matches any port (RFC 8252): each test run's
// portal listens on a port of its own. PKCE is required of it.
//
// Tests only: POST /_test/tamper {"aud": ..., "exp": ..., "nonce": ...} re-signs the NEXT ID token the token
// endpoint issues with those claims replaced (with the provider's own key), so the portal's checks of audience,
// expiry and nonce meet a token that is validly signed but wrong.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { generateKeyPair, exportJWK, SignJWT, decodeJwt } from 'jose';
import Provider from 'oidc-provider';

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};
const port = Number(env('OIDC_TEST_PORT'));
const issuer = `http://127.0.0.1:${port}`;
const accountsFile = env('OIDC_TEST_ACCOUNTS');
const accounts = () => JSON.parse(readFileSync(accountsFile, 'utf8'));

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signingJwk = { ...(await exportJWK(privateKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: env('OIDC_TEST_CLIENT_ID', 'gpulab-portal'),
    client_secret: env('OIDC_TEST_CLIENT_SECRET', 'test-client-secret'),
    application_type: 'native',
    redirect_uris: [env('OIDC_TEST_REDIRECT_URI', 'http://127.0.0.1/oidc/callback/')],
    post_logout_redirect_uris: [env('OIDC_TEST_POST_LOGOUT_URI', 'http://127.0.0.1/login/')],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  jwks: { keys: [signingJwk] },
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'given_name', 'family_name', 'name', 'posix_login'],
    groups: ['groups'],
  },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(ctx, sub) {
    const account = accounts()[sub];
    if (!account) return undefined;
    return { accountId: sub, claims: async () => ({ sub, ...account.claims }) };
  },
  cookies: { keys: ['test-cookie-key-not-secret'] },
  ttl: { IdToken: 600, AccessToken: 600, AuthorizationCode: 60, Session: 3600, Interaction: 600, Grant: 3600 },
});
provider.proxy = false;

// The next ID token's replaced claims (tests only), applied once.
let tamper = null;
provider.use(async (ctx, next) => {
  await next();
  if (ctx.path === '/token' && tamper && ctx.body?.id_token) {
    const claims = { ...decodeJwt(ctx.body.id_token), ...tamper };
    tamper = null;
    ctx.body = {
      ...ctx.body,
      id_token: await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: signingJwk.kid }).sign(privateKey),
    };
  }
});

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title, body) => `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)}</title></head>
<body style="font-family: sans-serif; max-width: 28rem; margin: 2rem auto"><h1>Campus sign-in (test provider)</h1>
${body}</body></html>`;

function loginForm(uid, error = '') {
  return page('Sign in', `${error ? `<p role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
<p><label>Campus login <input name="login" id="login" autocomplete="username" required></label></p>
<p><label>Password <input name="password" id="password" type="password" required></label></p>
<button type="submit" id="sign-in">Sign in</button></form>`);
}

function consentForm(uid, clientId, scopes) {
  return page('Authorize', `<p>${escape(clientId)} asks for: ${escape(scopes)}.</p>
<form method="post" action="/interaction/${uid}/confirm"><button type="submit" id="allow">Allow</button></form>`);
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error('interaction mismatch');
  const { prompt, params, session } = details;
  if (req.method === 'GET') {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.end(prompt.name === 'login' ? loginForm(uid) : consentForm(uid, params.client_id, params.scope));
    return;
  }
  const form = await readForm(req);
  if (action === 'login') {
    const login = form.get('login') || '';
    const account = accounts()[login];
    if (!account || account.password !== form.get('password')) {
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.statusCode = 200;
      res.end(loginForm(uid, 'Wrong login or password.'));
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const callback = provider.callback();
createServer(async (req, res) => {
  try {
    const url = new URL(req.url, issuer);
    const match = url.pathname.match(/^\/interaction\/([\w-]+)(?:\/(login|confirm))?$/);
    if (match) {
      await interaction(req, res, match[1], match[2]);
    } else if (url.pathname === '/_test/tamper' && req.method === 'POST') {
      let body = '';
      for await (const chunk of req) body += chunk;
      tamper = JSON.parse(body);
      res.end('ok');
    } else {
      callback(req, res);
    }
  } catch (err) {
    res.statusCode = 400;
    res.end(`error: ${err.message}`);
  }
}).listen(port, '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
