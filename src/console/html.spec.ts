import { redactor } from '../logging/redact';
import { Html, html } from './html';

describe('html', () => {
  it('escapes every interpolated value, in text and in attributes', () => {
    const name = '<script>alert(1)</script>';
    const quote = '" onmouseover="alert(2)';
    const page = html`<td title="${quote}">${name}</td>`;
    expect(page.text).toBe('<td title="&quot; onmouseover=&quot;alert(2)">&lt;script&gt;alert(1)&lt;/script&gt;</td>');
  });

  it('takes markup made by html as it is, and escapes the values inside it', () => {
    const rows = ['a&b', "<i>'x'</i>"].map((cell) => html`<li>${cell}</li>`);
    expect(html`<ul>${rows}</ul>`.text).toBe('<ul><li>a&amp;b</li><li>&lt;i&gt;&#39;x&#39;&lt;/i&gt;</li></ul>');
  });

  it('masks secrets as log lines are masked: a configured one, and anything shaped like a forge token', () => {
    redactor.addSecret('configured-secret-value-42');
    const page = html`<p>${'answer quoted configured-secret-value-42 and glpat-abcdefghijklmnopqrst'}</p>`;
    expect(page.text).not.toContain('configured-secret-value-42');
    expect(page.text).not.toContain('glpat-abcdefghijklmnopqrst');
    expect(page.text).toContain('[REDACTED]');
  });

  it('prints nothing for absent values and false, and numbers as they are', () => {
    expect(html`[${undefined}${null}${false}${0}${true}]`.text).toBe('[0true]');
  });

  it('does not take a string that looks like markup, nor an object posing as Html, as markup', () => {
    const posing = { text: '<b>bold</b>' } as unknown as string;
    expect(html`${'<b>bold</b>'}`.text).toBe('&lt;b&gt;bold&lt;/b&gt;');
    expect(html`${posing}`.text).toBe('[object Object]');
    expect(html`${new Html('<b>bold</b>')}`.text).toBe('<b>bold</b>');
  });
});
