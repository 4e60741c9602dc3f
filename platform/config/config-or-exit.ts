import { ConfigError, type Env } from './env.js';

/**
 * Loads the process's configuration with `load`, or exits 2 with the one line that names the bad
 * variable (or the development fallback production refuses, platform/config/production.ts). Its
 * own module, light to import: the image's entry checks a command's configuration before it loads
 * the command's code (processes/run-part.cli.ts).
 */
export function configOrExit<C>(load: (env: Env) => C): C {
  try {
    return load(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
}
