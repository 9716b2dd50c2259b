/** The temporal binary could not be found or installed, or the server did not start. Light: the CLI imports it up front. */
export class ServerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerError';
  }
}
