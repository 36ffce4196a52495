import { CredentialKinds } from '../credential-kind';
import { deployKeys } from './deploy-keys/deploy-keys';
import { sshKeys } from './ssh-keys/ssh-keys';

/**
 * The credential kinds key_rotation rotates, each under its section of the policy file, in the file's order. A new
 * kind is a file (or folder) here and a line in this list.
 */
export const CREDENTIAL_KINDS = new CredentialKinds({
  ssh_keys: sshKeys,
  deploy_keys: deployKeys,
});
