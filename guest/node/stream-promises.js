// The `stream/promises` built-in: readable-stream's (the `stream` built-in's) promise forms of pipeline and
// finished.
import { promises } from 'readable-stream';

export const { pipeline, finished } = promises;
export default promises;
