import json,glob,os,sys,statistics,datetime
out=sys.argv[1]
t0=float(open(f'{out}/probe_start').read())
samples=[]
for line in open(f'{out}/samples.txt'):
    if line.startswith('#'): continue
    t,c,b,a=line.split(); samples.append((t0+float(t),float(b),float(a)))
profs=[]
for f in glob.glob(f'{out}/prof/rounds/*/gpt2-tiny-six/*.json'):
    d=json.load(open(f)); r=int(f.split('/rounds/')[1].split('/')[0])
    start=datetime.datetime.strptime(d['source']['date'],'%Y-%m-%dT%H:%M:%SZ').replace(tzinfo=datetime.timezone.utc).timestamp()
    end=os.path.getmtime(f)
    tps=[k.split()[-1] for k in d['source']['entries']]
    profs.append((start,end,r,d['source']['device_type'],d))
profs.sort()
def pear(x,y):
    mx,my=statistics.fmean(x),statistics.fmean(y)
    sxy=sum((a-mx)*(b-my) for a,b in zip(x,y)); sxx=sum((a-mx)**2 for a in x); syy=sum((b-my)**2 for b in y)
    return sxy/(sxx*syy)**.5 if sxx>0 and syy>0 else float('nan')
series={}
for start,end,r,cls,d in profs:
    win=[s for s in samples if start<=s[0]<=end]
    pb=statistics.median(s[1] for s in win) if win else float('nan')
    pa=statistics.median(s[2] for s in win) if win else float('nan')
    for mbs in ('1','2','4'):
        for tp in d.get(mbs,{}):
            e=d[mbs][tp]['1']; blk=(e[0]+e[1])*1e3
            series.setdefault((cls,tp,mbs),[]).append((r,blk,pb,pa,start-profs[0][0],len(win)))
print('class tp mbs: rounds block ms | probe block us | raw spread %, /probe spread %, /alu spread %, r(block,probe), r(block,alu)')
for k in sorted(series):
    v=sorted(series[k]); b=[x[1] for x in v]; p=[x[2] for x in v]; a=[x[3] for x in v]
    sp=lambda xs:(max(xs)-min(xs))/statistics.median(xs)*100
    nb=[x/y for x,y in zip(b,p)]; na=[x/y for x,y in zip(b,a)]
    print(k, ' '.join('%.1f'%x for x in b),'|',' '.join('%.0f'%x for x in p),'| %.1f %.1f %.1f r=%.2f %.2f'%(sp(b),sp(nb),sp(na),pear(b,p),pear(b,a)))
