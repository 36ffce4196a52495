export * from './common';
export * from './jobs';
export * from './registry';
export * from './namespaces';
export * from './users';
export * from './keys';
export * from './access-requests';
