import { VERSION } from '../../version';
import { type Html, html, type Interpolated } from '../html';

/** What every page needs besides its own content. */
export interface PageFrame {
  readonly now: Date;
  /** The session's form token, for the forms the page holds (pause, resume, log out). */
  readonly formToken: string;
  /** Logged in with the login form's cookie: the header offers to log out. */
  readonly cookieSession: boolean;
}

export function layout(
  title: string,
  frame: PageFrame,
  body: Interpolated,
  options: { refreshSeconds?: number } = {},
): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
${options.refreshSeconds ? html`<meta http-equiv="refresh" content="${options.refreshSeconds}">` : ''}
<title>${title} · Forgewarden</title>
<link rel="stylesheet" href="/console.css">
</head>
<body>
<header>
<a class="brand" href="/">Forgewarden</a>
<nav><a href="/">Overview</a><a href="/audit">Audit</a></nav>
${frame.cookieSession ? html`<form method="post" action="/logout"><input type="hidden" name="form_token" value="${frame.formToken}"><button type="submit">Log out</button></form>` : ''}
</header>
<main>
${body}
</main>
<footer>Forgewarden ${VERSION} · read from Redis at ${frame.now.toISOString()}: every replica shows the same</footer>
</body>
</html>
`;
}

/** A page that says one thing: an unknown policy, an explain already running, the console off. */
export function messagePage(title: string, frame: PageFrame, message: Interpolated): Html {
  return layout(title, frame, html`<h1>${title}</h1><p>${message}</p><p><a href="/">Back to the overview</a></p>`);
}
