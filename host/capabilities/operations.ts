// The capability operations a guest can start (placeholder: the table follows).
export type OpKind =
  | 'commands.run' | 'commands.start' | 'commands.status' | 'commands.stop'
  | 'http.fetch' | 'http.read' | 'browser.call' | 'plugins.call'
  | 'fs.readFile' | 'fs.writeFile' | 'fs.appendFile' | 'fs.readdir' | 'fs.stat' | 'fs.mkdir' | 'fs.rm' | 'fs.rename';
