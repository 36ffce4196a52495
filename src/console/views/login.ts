import { type Html, html } from '../html';

/** The login form: the console token, once, for an HttpOnly cookie. */
export function loginPage(next: string, failed: boolean): Html {
  return html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Log in · Forgewarden</title><link rel="stylesheet" href="/console.css"></head>
<body>
<header><span class="brand">Forgewarden</span></header>
<main>
<h1>Console</h1>
${failed ? html`<p class="error">That is not the console token.</p>` : ''}
<form method="post" action="/login">
<input type="hidden" name="next" value="${next}">
<p><label>Console token (http.console_token) <input type="password" name="token" autocomplete="current-password" required autofocus size="40"></label></p>
<p><button class="primary" type="submit">Log in</button></p>
</form>
</main>
</body>
</html>
`;
}
