// `npm start` and `node dist/main.js`: every part in one process (processes/system.main.ts). The
// entry stays at the top of the repository, where a newcomer looks for it; the image's
// `run-part all` starts the same module.
import './processes/system.main.js';
