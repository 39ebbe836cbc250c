import { greet } from './greet';

export const message = greet('world');
