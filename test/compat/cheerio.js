// cheerio: load, select, traverse, modify, serialise.
import * as cheerio from 'cheerio';
import { tool } from './_tool.js';

export const args = {};
const HTML = `<html><body><h1 class="t">Fruits &amp; more</h1>
<ul id="fruits"><li class="apple" data-price="1.5">Apple</li><li class="orange">Orange</li><li class="pear">Pear &eacute;</li></ul>
<form><input name="q" value="x y"><select name="s"><option value="1" selected>one</option></select></form></body></html>`;
export function run() {
  const $ = cheerio.load(HTML);
  const names = $('#fruits li').map((i, el) => $(el).text()).get();
  $('.orange').addClass('ripe').attr('data-x', '<&>');
  $('<li class="plum">Plum</li>').appendTo('#fruits');
  $('.pear').remove();
  return {
    names,
    title: $('h1.t').text(),
    data: $('.apple').data(),
    count: $('li').length,
    next: $('.apple').next().attr('class'),
    form: $('form').serializeArray(),
    html: $('#fruits').html(),
    whole: $.html().length,
    xml: cheerio.load('<r><i a="1">x</i></r>', { xml: true }).xml(),
    text: cheerio.load('<p>a<b>b</b>&nbsp;c</p>').root().text(),
  };
}
tool('cheerio', run);
