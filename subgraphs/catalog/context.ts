import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { RequestInfo } from '../shared/request-context.js';
import type { CatalogLoaders } from './loaders.js';
import type { CatalogServices } from './services.js';

export interface CatalogContext extends RequestInfo {
  db: Db;
  loaders: CatalogLoaders;
  clock: Clock;
  services: CatalogServices;
}
