import type { RedisClient } from './connection';

/** The daemon's shared Redis connection (ledgers, locks, audit trail, rate-limit budget). */
export const REDIS = Symbol('Redis');

/**
 * The connection's type (one server, a Sentinel-watched primary or a Cluster), for code that only hands it on:
 * only src/redis/ and the engine's stores import ioredis (a lint rule says so).
 */
export type RedisConnection = RedisClient;
