import { CredentialKinds } from '../credential-kind';
import { TokenKinds } from '../token-kind';
import { groupAccessTokens, projectAccessTokens } from './access-tokens/access-tokens';
import { deployKeys } from './deploy-keys/deploy-keys';
import { deployTokens } from './deploy-tokens/deploy-tokens';
import { personalAccessTokens } from './personal-access-tokens/personal-access-tokens';
import { sshKeys } from './ssh-keys/ssh-keys';

/**
 * The credential kinds key_rotation rotates, each under its section of the policy file, in the file's order. A new
 * kind is a file (or folder) here and a line in this list: key pairs made by the bot in CREDENTIAL_KINDS, tokens
 * made by the forge in TOKEN_KINDS.
 */
export const CREDENTIAL_KINDS = new CredentialKinds({
  ssh_keys: sshKeys,
  deploy_keys: deployKeys,
});

export const TOKEN_KINDS = new TokenKinds({
  project_access_tokens: projectAccessTokens,
  group_access_tokens: groupAccessTokens,
  deploy_tokens: deployTokens,
  personal_access_tokens: personalAccessTokens,
});
